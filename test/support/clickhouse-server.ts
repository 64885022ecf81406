// A ClickHouse server for the test suite: the part of ClickHouse's HTTP interface that @clickhouse/client uses,
// served over the embedded engine (chdb's Session), so that CLICKHOUSE_URL mode runs in `npm test` through the very
// code path production uses (src/db/clickhouse.ts over @clickhouse/client and HTTP).
//
// What it serves, as ClickHouse does:
// - `GET /ping` (and `GET /` without a query): `Ok.\n`.
// - `POST /` (or GET): the statement in the URL's `query`, in the body, or both (the URL's, a new line, then the
//   body: `INSERT … FORMAT X` in the URL and its rows in the body); a gzip, deflate or br request body
//   (Content-Encoding) is decompressed.
// - `param_<name>` URL parameters, in ClickHouse's text form (as the client formats them), bound by the engine itself
//   (`SET param_<name> = '…'`).
// - `database` (the current database of the statement; `default` when absent), `query_id` (generated when absent),
//   `default_format` (TabSeparated when absent, as the server's default; a FORMAT clause wins).
// - Every other URL parameter is a setting of that statement alone: set on the engine before it, and set back to its
//   default before a later statement that does not name it. The HTTP layer's own parameters are not passed to the
//   engine (HTTP_PARAMETERS below): `enable_http_compression` (honoured: the response is compressed with the
//   Accept-Encoding's gzip, deflate or br), `wait_end_of_query`, `buffer_size`, `compress`/`decompress`, the
//   progress-header settings, the credentials, `role`, the session parameters.
// - Headers X-ClickHouse-Query-Id, X-ClickHouse-Summary (rows and bytes read, written for an INSERT, elapsed),
//   X-ClickHouse-Format, X-ClickHouse-Timezone (UTC), X-ClickHouse-Server-Display-Name.
// - Errors as ClickHouse sends them: the status ClickHouse gives the error code (exceptionCodeToHTTPStatus in
//   ClickHouse's sources: 400 for a syntax error or refused data, 404 for an unknown table, …, else 500), the header
//   X-ClickHouse-Exception-Code, and the body `Code: N. DB::Exception: … (NAME) (version V)`.
//
// Its limits, by design: one engine per process (chdb binds one data directory per process), with CONNECTIONS
// connections (as many statements at a time; the others wait for a free one); no users, passwords or grants (any
// credentials are accepted); no cluster (no Keeper, no ON CLUSTER, no replicated or distributed tables); no HTTP
// sessions (`session_id` is ignored); no multipart parameters; a result is sent whole once complete, never streamed
// or cut by an exception mid-stream; a `param_` binding stays on its connection after its statement (a later
// statement naming a parameter it does not send may see an old value where a server would fail). docs/testing.md.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import path from 'node:path';
import zlib from 'node:zlib';

/** URL parameters of ClickHouse's HTTP handler that are not settings of the statement. */
const HTTP_PARAMETERS = new Set([
  'query',
  'query_id',
  'database',
  'default_format',
  'user',
  'password',
  'quota_key',
  'role',
  'session_id',
  'session_timeout',
  'session_check',
  'close_session',
  'compress',
  'decompress',
  'buffer_size',
  'wait_end_of_query',
  'stacktrace',
  'client_protocol_version',
  'enable_http_compression',
  'http_zlib_compression_level',
  'http_response_compression_method',
  'http_native_compression_disable_checksumming_on_decompress',
  'send_progress_in_http_headers',
  'http_headers_progress_interval_ms',
  'http_send_progress_interval_ms',
  'http_response_buffer_size',
  'http_wait_end_of_query',
]);

// ClickHouse's status for an error code, by the code's name (exceptionCodeToHTTPStatus.cpp); any other is 500.
const STATUS_BY_ERROR: Record<number, string[]> = {
  400: [
    'BAD_ARGUMENTS',
    'CANNOT_COMPILE_REGEXP',
    'CANNOT_PARSE_TEXT',
    'CANNOT_PARSE_ESCAPE_SEQUENCE',
    'CANNOT_PARSE_QUOTED_STRING',
    'CANNOT_PARSE_DATE',
    'CANNOT_PARSE_DATETIME',
    'CANNOT_PARSE_NUMBER',
    'CANNOT_PARSE_DOMAIN_VALUE_FROM_STRING',
    'CANNOT_PARSE_IPV4',
    'CANNOT_PARSE_IPV6',
    'CANNOT_PARSE_INPUT_ASSERTION_FAILED',
    'CANNOT_PARSE_UUID',
    'DUPLICATE_COLUMN',
    'ILLEGAL_COLUMN',
    'UNKNOWN_ELEMENT_IN_AST',
    'UNKNOWN_TYPE_OF_AST_NODE',
    'THERE_IS_NO_COLUMN',
    'TOO_DEEP_AST',
    'TOO_BIG_AST',
    'UNEXPECTED_AST_STRUCTURE',
    'SYNTAX_ERROR',
    'INCORRECT_DATA',
    'TYPE_MISMATCH',
    'VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE',
  ],
  401: ['REQUIRED_PASSWORD'],
  403: ['UNKNOWN_USER', 'WRONG_PASSWORD', 'AUTHENTICATION_FAILED', 'SET_NON_GRANTED_ROLE', 'ACCESS_DENIED'],
  404: [
    'UNKNOWN_TABLE',
    'UNKNOWN_FUNCTION',
    'UNKNOWN_IDENTIFIER',
    'UNKNOWN_TYPE',
    'UNKNOWN_STORAGE',
    'UNKNOWN_DATABASE',
    'UNKNOWN_SETTING',
    'UNKNOWN_DIRECTION_OF_SORTING',
    'UNKNOWN_AGGREGATE_FUNCTION',
    'UNKNOWN_FORMAT',
    'UNKNOWN_DATABASE_ENGINE',
    'UNKNOWN_TYPE_OF_QUERY',
    'UNKNOWN_ROLE',
  ],
  408: ['TIMEOUT_EXCEEDED'],
  413: ['QUERY_IS_TOO_LARGE'],
  501: ['NOT_IMPLEMENTED'],
  503: ['SOCKET_TIMEOUT', 'CANNOT_OPEN_FILE', 'CANNOT_SCHEDULE_TASK'],
};
const STATUS = new Map(
  Object.entries(STATUS_BY_ERROR).flatMap(([status, names]) => names.map((name) => [name, Number(status)] as const)),
);

const CONTENT_TYPES: Record<string, string> = {
  JSON: 'application/json; charset=UTF-8',
  JSONCompact: 'application/json; charset=UTF-8',
  JSONEachRow: 'application/x-ndjson; charset=UTF-8',
  JSONCompactEachRow: 'application/x-ndjson; charset=UTF-8',
  TabSeparated: 'text/tab-separated-values; charset=UTF-8',
  TabSeparatedWithNames: 'text/tab-separated-values; charset=UTF-8',
  CSV: 'text/csv; charset=UTF-8; header=absent',
  CSVWithNames: 'text/csv; charset=UTF-8; header=present',
};

/** A ClickHouse error as the engine words it: `Code: N. DB::Exception: … (NAME)`. */
interface EngineError {
  code: number;
  name: string;
  message: string;
}

function engineError(error: unknown): EngineError {
  const message = error instanceof Error ? error.message : String(error);
  const code = /^Code: (\d+)\./.exec(message)?.[1];
  const name = /\(([A-Z0-9_]+)\)\s*$/.exec(message)?.[1];
  if (code && name) return { code: Number(code), name, message: message.trim() };
  // Not the engine's own error (the binding's): ClickHouse's code for an exception from outside its own kinds.
  return { code: 1001, name: 'STD_EXCEPTION', message: `Code: 1001. DB::Exception: ${message}. (STD_EXCEPTION)` };
}

/** A string literal of ClickHouse SQL. */
const literal = (text: string) => `'${text.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

async function requestBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const body = Buffer.concat(chunks);
  switch ((req.headers['content-encoding'] ?? '').toLowerCase()) {
    case 'gzip':
      return zlib.gunzipSync(body).toString('utf8');
    case 'deflate':
      return zlib.inflateSync(body).toString('utf8');
    case 'br':
      return zlib.brotliDecompressSync(body).toString('utf8');
    default:
      return body.toString('utf8');
  }
}

/** The Accept-Encoding the response is compressed with, when the request asked for compression. */
function responseEncoding(req: IncomingMessage, url: URL): 'gzip' | 'deflate' | 'br' | undefined {
  if (url.searchParams.get('enable_http_compression') !== '1') return undefined;
  const accepted = String(req.headers['accept-encoding'] ?? '');
  return (['gzip', 'deflate', 'br'] as const).find((encoding) => accepted.includes(encoding));
}

function compress(body: Buffer, encoding: 'gzip' | 'deflate' | 'br' | undefined): Buffer {
  if (encoding === 'gzip') return zlib.gzipSync(body);
  if (encoding === 'deflate') return zlib.deflateSync(body);
  if (encoding === 'br') return zlib.brotliCompressSync(body);
  return body;
}

// Connections to the engine: each runs one statement at a time, so that many let statements run side by side, as
// on a server (a report does not hold up the inserts behind it).
const CONNECTIONS = 4;

type ChdbSession = InstanceType<typeof import('chdb').Session>;

/**
 * One connection to the engine. A statement's settings, parameters and database are set on the connection just before
 * it (SET, USE); settings that the previous statement set and this one does not name go back to their defaults.
 */
class EngineConnection {
  private database = 'default';
  private settingsInForce = new Set<string>();

  constructor(readonly session: ChdbSession) {}

  async run(url: URL, statement: string, format: string) {
    const settings = new Map(
      [...url.searchParams].filter(([name]) => !name.startsWith('param_') && !HTTP_PARAMETERS.has(name)),
    );
    const database = url.searchParams.get('database') || 'default';
    try {
      const setUp = this.setUp(url, settings, database);
      const result = await this.session.queryAsync([...setUp, statement].join(';\n'), { format });
      this.settingsInForce = new Set(settings.keys());
      this.database = database;
      return result;
    } catch (error) {
      await this.reset([...this.settingsInForce, ...settings.keys()].filter((name) => IDENTIFIER.test(name)));
      throw error;
    }
  }

  /** The SET and USE statements that give this request's statement its settings, parameters and database. */
  private setUp(url: URL, settings: Map<string, string>, database: string): string[] {
    const parameters = [...url.searchParams].filter(([name]) => name.startsWith('param_'));
    for (const name of [...settings.keys(), ...parameters.map(([name]) => name), database]) {
      if (!IDENTIFIER.test(name)) throw new Error(`Code: 36. DB::Exception: Invalid name: ${name}. (BAD_ARGUMENTS)`);
    }
    const assignments = [
      ...[...settings].map(([name, value]) => `${name} = ${literal(value)}`),
      ...[...this.settingsInForce].filter((name) => !settings.has(name)).map((name) => `${name} = DEFAULT`),
      ...parameters.map(([name, value]) => `${name} = ${literal(value)}`),
    ];
    return [
      ...(assignments.length > 0 ? [`SET ${assignments.join(', ')}`] : []),
      ...(database !== this.database ? [`USE ${database}`] : []),
    ];
  }

  /** After a failed statement, which may have left some of its settings in force: each back to its default. */
  private async reset(names: Iterable<string>): Promise<void> {
    for (const name of new Set(names)) await this.session.queryAsync(`SET ${name} = DEFAULT`).catch(() => {});
    this.settingsInForce = new Set();
    // The next statement states its database again.
    this.database = '';
  }
}

/** The connections; a request waits for a free one. */
class ConnectionPool {
  private readonly idle: EngineConnection[];
  private readonly waiting: ((connection: EngineConnection) => void)[] = [];

  constructor(private readonly connections: EngineConnection[]) {
    this.idle = [...connections];
  }

  acquire(): Promise<EngineConnection> {
    const connection = this.idle.pop();
    return connection ? Promise.resolve(connection) : new Promise((resolve) => this.waiting.push(resolve));
  }

  release(connection: EngineConnection): void {
    const next = this.waiting.shift();
    if (next) next(connection);
    else this.idle.push(connection);
  }

  async use<T>(work: (connection: EngineConnection) => Promise<T>): Promise<T> {
    const connection = await this.acquire();
    try {
      return await work(connection);
    } finally {
      this.release(connection);
    }
  }

  /** Once every statement under way has ended: the connections close. */
  async close(): Promise<void> {
    const held = await Promise.all(this.connections.map(() => this.acquire()));
    for (const connection of held) connection.session.close();
  }
}

export interface ClickHouseTestServer {
  url: string;
  close(): Promise<void>;
}

/**
 * Serves the engine on `dataDir` at 127.0.0.1:`port` (0: a free port), in this process; `database` is created first
 * (as the server image's CLICKHOUSE_DB does). Only one per process: the engine binds one data directory per process.
 */
export async function serveClickHouse(options: {
  dataDir: string;
  database?: string;
  port?: number;
}): Promise<ClickHouseTestServer> {
  fs.mkdirSync(options.dataDir, { recursive: true });
  // Loaded here, not at the top: the jest process that starts the server processes never loads the engine.
  const { Session } = await import('chdb');
  const pool = new ConnectionPool(
    Array.from({ length: CONNECTIONS }, () => new EngineConnection(new Session(options.dataDir))),
  );
  const version = await pool.use(async ({ session }) => {
    if (options.database && options.database !== 'default') {
      if (!IDENTIFIER.test(options.database)) throw new Error(`not a plain identifier: ${options.database}`);
      await session.queryAsync(`CREATE DATABASE IF NOT EXISTS ${options.database}`);
    }
    return (await session.queryAsync('SELECT version()', { format: 'TabSeparated' })).text().trim();
  });

  async function answerQuery(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const queryId = url.searchParams.get('query_id') || randomUUID();
    const format = url.searchParams.get('default_format') || 'TabSeparated';
    const headers: Record<string, string> = {
      'X-ClickHouse-Query-Id': queryId,
      'X-ClickHouse-Timezone': 'UTC',
      'X-ClickHouse-Server-Display-Name': 'runwatch-test-clickhouse',
    };
    const statement = [url.searchParams.get('query'), await requestBody(req)].filter(Boolean).join('\n');
    const encoding = responseEncoding(req, url);
    if (encoding) headers['Content-Encoding'] = encoding;
    try {
      if (statement.trim() === '') throw new Error('Code: 62. DB::Exception: Empty query. (SYNTAX_ERROR)');
      const result = await pool.use((connection) => connection.run(url, statement, format));
      const read = { rows: String(result.rowsRead), bytes: String(result.bytesRead) };
      const inserted = /^\s*INSERT\b/i.test(statement);
      const summary = {
        read_rows: read.rows,
        read_bytes: read.bytes,
        written_rows: inserted ? read.rows : '0',
        written_bytes: inserted ? read.bytes : '0',
        total_rows_to_read: read.rows,
        result_rows: inserted ? '0' : read.rows,
        result_bytes: inserted ? '0' : read.bytes,
        elapsed_ns: String(Math.round(result.elapsed * 1e9)),
      };
      res.writeHead(200, {
        ...headers,
        'Content-Type': CONTENT_TYPES[format] ?? 'text/plain; charset=UTF-8',
        'X-ClickHouse-Format': format,
        'X-ClickHouse-Summary': JSON.stringify(summary),
      });
      res.end(compress(Buffer.from(result.bytes()), encoding));
    } catch (error) {
      const { code, name, message } = engineError(error);
      res.writeHead(STATUS.get(name) ?? 500, {
        ...headers,
        'Content-Type': 'text/plain; charset=UTF-8',
        'X-ClickHouse-Exception-Code': String(code),
      });
      res.end(compress(Buffer.from(`${message} (version ${version})\n`), encoding));
    }
  }

  async function answer(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (url.pathname === '/ping' || (url.pathname === '/' && req.method === 'GET' && !url.searchParams.has('query'))) {
      res.writeHead(200, { 'Content-Type': 'text/plain; charset=UTF-8' }).end('Ok.\n');
    } else if (url.pathname === '/') {
      await answerQuery(req, res, url);
    } else {
      res.writeHead(404, { 'Content-Type': 'text/plain; charset=UTF-8' }).end(`There is no handle ${url.pathname}\n`);
    }
  }

  // ClickHouse takes a URL of up to 1 MiB (http_max_uri_size), and the client sends query parameters in it: a page's
  // thousand run keys are ~60 KiB, past Node's default 16 KiB of headers.
  const server = http.createServer({ maxHeaderSize: 1024 * 1024 }, (req, res) => {
    answer(req, res).catch((error: unknown) => res.destroy(error as Error));
  });
  // Longer than the client's idle-socket time (2.5 s), so the server never closes a socket the client reuses.
  server.keepAliveTimeout = 10_000;
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await pool.close();
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// The server as a child process: the jest worker that talks to it may run an embedded engine of its own, and the
// engine binds one data directory per process.

const READY_TIMEOUT_MS = 60_000;

export interface ClickHouseServerProcess {
  url: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

/** Starts `node --import tsx clickhouse-server.ts DATA_DIR DATABASE`; resolves with its URL once it listens. */
export function startClickHouseServerProcess(dataDir: string, database = 'default'): Promise<ClickHouseServerProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', __filename, dataDir, database], {
    cwd: path.resolve(__dirname, '..', '..'),
    // Its standard input is the parent's lifeline: when the parent dies, the server ends.
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`the test ClickHouse server did not listen within ${READY_TIMEOUT_MS} ms`));
    }, READY_TIMEOUT_MS);
    const exited = (code: number | null) => {
      clearTimeout(timer);
      reject(new Error(`the test ClickHouse server exited (${code}) before it listened:\n${output}`));
    };
    child.once('exit', exited);
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
      const url = /^listening (\S+)$/m.exec(output)?.[1];
      if (!url) return;
      clearTimeout(timer);
      child.off('exit', exited);
      child.stdout!.removeAllListeners('data').resume();
      resolve({
        url,
        child,
        stop: () =>
          new Promise<void>((done) => {
            if (child.exitCode !== null || child.signalCode !== null) return done();
            child.once('exit', () => done());
            child.kill('SIGTERM');
          }),
      });
    });
  });
}

async function main(dataDir: string, database: string): Promise<void> {
  const server = await serveClickHouse({ dataDir, database });
  const stop = () => void server.close().then(() => process.exit(0));
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  // The parent's end: a jest run that dies leaves no server behind.
  process.stdin.once('end', stop).resume();
  process.stdout.write(`listening ${server.url}\n`);
}

if (require.main === module) {
  const [dataDir, database = 'default'] = process.argv.slice(2);
  if (!dataDir) {
    process.stderr.write('usage: node --import tsx test/support/clickhouse-server.ts DATA_DIR [DATABASE]\n');
    process.exit(2);
  }
  main(dataDir, database).catch((error: unknown) => {
    process.stderr.write(`${String(error)}\n`);
    process.exit(1);
  });
}
