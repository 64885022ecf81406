// The embedded engine's statements side by side, as a server runs them. chdb runs every statement that has
// parameters one at a time in a process (its bindings keep a statement's parameters in state its connections share),
// and a connection runs one statement at a time. So the embedded store binds parameters itself, as the literals
// ClickHouse puts in their place when it binds them (`_CAST(literal, 'Type')`: the statement it plans is the same, and
// still matches its projections), and spreads statements over a few connections to one data directory.
import { TupleParam, type ClickHouseClient } from '@clickhouse/client';

/** What the store asks of a client (the server's streams use its `exec`; the embedded engine's have sessions). */
export type StatementClient = Pick<ClickHouseClient, 'query' | 'command' | 'ping' | 'close'>;

/**
 * A character of a string literal, escaped where it must be. Only `\` and `'` can end a literal early; control
 * characters are escaped too (`\xHH`), so that a statement's text never holds a NUL or a line break of a value.
 */
const escapeChar = (char: string) => {
  const code = char.charCodeAt(0);
  if (code >= 0x80) return char; // C1 controls: as they are (a \xHH escape would be one byte, not their UTF-8)
  return char === '\\' || char === "'" ? `\\${char}` : `\\x${code.toString(16).padStart(2, '0')}`;
};

/** A string as a ClickHouse string literal. */
const quote = (text: string) => `'${text.replace(/[\\'\p{Cc}]/gu, escapeChar)}'`;

/** A parameter's value as a ClickHouse literal: the values the store's statements take, and no others. */
export function toLiteral(value: unknown): string {
  if (value === null) return 'NULL';
  if (typeof value === 'string') return quote(value);
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new TypeError(`a parameter must be a finite number: ${value}`);
    return String(value);
  }
  if (Array.isArray(value)) return `[${value.map(toLiteral).join(', ')}]`;
  if (value instanceof TupleParam) return `tuple(${value.values.map(toLiteral).join(', ')})`;
  throw new TypeError(`a parameter cannot be bound as a literal: ${Object.prototype.toString.call(value)}`);
}

// A placeholder, {name:Type}. The statements' text is the service's own; values never go into it but through here.
const PLACEHOLDER = /\{(\w+):([^{}]+)\}/g;

/**
 * A statement with each {name:Type} replaced by its value as a literal of that type. A statement without parameters
 * is left as it is: an insert's rows follow its text, and are not the statement's to bind.
 */
export function bindLiterals(sql: string, params: Record<string, unknown> = {}): string {
  if (Object.keys(params).length === 0) return sql;
  return sql.replace(PLACEHOLDER, (_placeholder, name: string, type: string) => {
    if (!Object.hasOwn(params, name) || params[name] === undefined)
      throw new TypeError(`no value for the parameter ${name}`);
    const value = params[name];
    // A string literal is a String already, and goes where the grammar takes a literal alone (ALTER … DROP PART).
    if (type.trim() === 'String' && typeof value === 'string') return quote(value);
    return `_CAST(${toLiteral(value)}, ${quote(type.trim())})`;
  });
}

/** The error of a statement that no longer waits for a connection: its read's time is up (read-scope.ts). */
const abandoned = () => new DOMException('the statement was not waited for', 'AbortError');

/**
 * Clients over one data directory, a statement to each: a statement takes an idle client or waits for one, in turn
 * (waiting here rather than in a connection keeps the threads of Node's pool, where chdb runs statements, free). A
 * statement with an abort signal stops waiting when it aborts.
 */
export function connectionPool(clients: readonly ClickHouseClient[]): StatementClient {
  const idle = [...clients];
  const waiting: { take: (client: ClickHouseClient) => void }[] = [];

  function acquire(signal: AbortSignal | undefined): Promise<ClickHouseClient> {
    if (signal?.aborted) return Promise.reject(abandoned());
    const client = idle.pop();
    if (client) return Promise.resolve(client);
    return new Promise((resolve, reject) => {
      const waiter = {
        take: (taken: ClickHouseClient) => {
          signal?.removeEventListener('abort', leave);
          resolve(taken);
        },
      };
      const leave = () => {
        waiting.splice(waiting.indexOf(waiter), 1);
        reject(abandoned());
      };
      signal?.addEventListener('abort', leave, { once: true });
      waiting.push(waiter);
    });
  }

  function release(client: ClickHouseClient) {
    const next = waiting.shift();
    if (next) next.take(client);
    else idle.push(client);
  }

  async function withClient<T>(signal: AbortSignal | undefined, work: (client: ClickHouseClient) => Promise<T>) {
    const client = await acquire(signal);
    try {
      return await work(client);
    } finally {
      release(client);
    }
  }

  return {
    query: ((params) =>
      withClient(params.abort_signal, (client) =>
        client.query({ ...params, query: bindLiterals(params.query, params.query_params), query_params: undefined }),
      )) as ClickHouseClient['query'],
    command: (params) =>
      withClient(params.abort_signal, (client) =>
        client.command({ ...params, query: bindLiterals(params.query, params.query_params), query_params: undefined }),
      ),
    ping: () => withClient(undefined, (client) => client.ping()),
    close: async () => {
      await Promise.all(clients.map((client) => client.close()));
    },
  };
}
