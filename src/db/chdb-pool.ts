// The embedded engine's statements side by side, as a server runs them. chdb runs every statement that has
// parameters one at a time in a process (its bindings keep a statement's parameters in state its connections share),
// and a connection runs one statement at a time. So the embedded store binds parameters itself, as the literals
// ClickHouse puts in their place when it binds them (`_CAST(literal, 'Type')`: the statement it plans is the same, and
// still matches its projections), and spreads statements over a few connections to one data directory.
import { TupleParam, type ClickHouseClient, type ClickHouseSettings } from '@clickhouse/client';

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
  // `(a, b)` parses as one literal of a whole array of them, where `tuple(a, b)` is a call each; one element needs it.
  if (value instanceof TupleParam)
    return `${value.values.length === 1 ? 'tuple' : ''}(${value.values.map(toLiteral).join(', ')})`;
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

/** The error of a statement no longer waited for: its read's time is up (read-scope.ts). */
const abandoned = () => new DOMException('the statement was not waited for', 'AbortError');

/** What the pool asks of the store about the statement under way. */
export interface PoolPolicy {
  /** Whether it is a read's (read-scope.ts). */
  isRead(): boolean;
  /** Its settings as it starts on a connection: a read's time left is counted from then, after its wait. */
  atStart(settings: ClickHouseSettings | undefined): ClickHouseSettings | undefined;
}

/** A statement waiting for a connection: it starts on the one it is given. */
type Waiter = (client: ClickHouseClient) => void;

/** A running statement's promise, or its abandonment once `signal` aborts (the statement runs on regardless). */
function untilAborted<T>(running: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return running;
  return new Promise((resolve, reject) => {
    const stop = () => reject(abandoned());
    if (signal.aborted) stop();
    signal.addEventListener('abort', stop, { once: true });
    running
      .finally(() => signal.removeEventListener('abort', stop))
      .then(resolve, reject)
      .catch(() => {});
  });
}

/**
 * Clients over one data directory, a statement to each. A statement takes an idle client or waits for one
 * (waiting here rather than in a connection keeps the threads of Node's pool, where chdb runs statements, free), and
 * gives it back when it has ended, even when no longer waited for. Reads take all the clients but one, and wait
 * after other statements: a flush's insert, a job or a health check never waits behind reads, which may run at a
 * lower priority (READ_THREAD_NICE). A statement with an abort signal (a read's time) stops being waited for when it
 * aborts, waiting or running.
 */
export function connectionPool(clients: readonly ClickHouseClient[], policy: PoolPolicy): StatementClient {
  const idle = [...clients];
  const readRoom = Math.max(1, clients.length - 1);
  let readsRunning = 0;
  // Others first, then reads; each in turn.
  const waiting: { others: Waiter[]; reads: Waiter[] } = { others: [], reads: [] };
  const queueOf = (read: boolean) => (read ? waiting.reads : waiting.others);
  const canStart = (read: boolean) => idle.length > 0 && (!read || readsRunning < readRoom);

  function take(read: boolean) {
    if (read) readsRunning += 1;
    return idle.pop()!;
  }

  function acquire(read: boolean, signal: AbortSignal | undefined): Promise<ClickHouseClient> {
    if (signal?.aborted) return Promise.reject(abandoned());
    if (canStart(read) && queueOf(read).length === 0) return Promise.resolve(take(read));
    return new Promise((resolve, reject) => {
      const leave = () => {
        queueOf(read).splice(queueOf(read).indexOf(waiter), 1);
        reject(abandoned());
      };
      const waiter: Waiter = (client) => {
        signal?.removeEventListener('abort', leave);
        resolve(client);
      };
      signal?.addEventListener('abort', leave, { once: true });
      queueOf(read).push(waiter);
    });
  }

  function release(client: ClickHouseClient, read: boolean) {
    idle.push(client);
    if (read) readsRunning -= 1;
    for (const read of [false, true]) {
      while (queueOf(read).length > 0 && canStart(read)) queueOf(read).shift()!(take(read));
    }
  }

  async function run<T>(signal: AbortSignal | undefined, work: (client: ClickHouseClient) => Promise<T>) {
    const read = policy.isRead();
    const client = await acquire(read, signal);
    const running = (async () => work(client))().finally(() => release(client, read));
    return untilAborted(running, signal);
  }

  /** A statement as a connection takes it: its parameters bound, its settings as it starts, no signal of its own. */
  const asStarted = <P extends { query: string; query_params?: Record<string, unknown> }>(params: P) => ({
    ...params,
    query: bindLiterals(params.query, params.query_params),
    query_params: undefined,
    abort_signal: undefined,
    clickhouse_settings: policy.atStart((params as { clickhouse_settings?: ClickHouseSettings }).clickhouse_settings),
  });

  return {
    query: ((params) =>
      run(params.abort_signal, (client) => client.query(asStarted(params)))) as ClickHouseClient['query'],
    command: (params) => run(params.abort_signal, (client) => client.command(asStarted(params))),
    ping: () => run(undefined, (client) => client.ping()),
    close: async () => {
      await Promise.all(clients.map((client) => client.close()));
    },
  };
}
