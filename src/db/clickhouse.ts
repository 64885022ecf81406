// The ClickHouse store: one small interface over a real server or the embedded engine (chdb).
import fs from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { ClickHouseLogLevel, createClient, type ClickHouseClient, type ClickHouseSettings } from '@clickhouse/client';
import { AppError, OverloadError, StoreUnavailableError } from '../errors';
import { connectionPool, type PoolPolicy, type StatementClient } from './chdb-pool';
import { streamOverSession } from './chdb-stream';
import { readAbortSignal, readNice, readTimeLeftMs } from './read-scope';
import { settledReads, type SettledRange } from './settled-reads';
import { layoutSettings, SINGLE, type ClickHouseLayout } from './topology';

export interface QueryLimits {
  maxExecutionSeconds: number;
  maxMemoryBytes: number;
}

export interface ClickHouseQuery {
  /** A short name for logs and system.query_log (log_comment). */
  name: string;
  sql: string;
  params?: Record<string, unknown>;
  /** Time and memory limits; a query over them fails with 503 instead of hanging. */
  limits?: QueryLimits;
}

/** How an insert of encoded rows is made. */
export interface InsertOptions {
  /** The engine drops an insert whose token it has seen among the table's last inserts (a retried chunk). */
  deduplicationToken?: string;
  /** The server batches the rows with other inserts (async_insert) and answers once they are stored. */
  serverBatched?: boolean;
}

/** A query whose result is streamed as the engine writes it, in one of its output formats. */
export interface StreamedQuery extends ClickHouseQuery {
  /** An output format of the engine: CSVWithNames, JSONEachRow, Parquet, … */
  format: string;
  /** Settings of this query alone (the output format's, a sort's spill threshold). */
  settings?: Record<string, string | number>;
}

export interface ClickHouseStore {
  /** The server's layout (single for the embedded engine): how migrations render, what a DELETE names. */
  layout: ClickHouseLayout;
  query<Row>(query: ClickHouseQuery): Promise<Row[]>;
  /**
   * A query with a LIMIT, and how many rows it had before it: what a count over the same rows would say, counted by
   * the engine as they pass (`exact_rows_before_limit`), so that a page and its total take one read.
   */
  queryCounted<Row>(query: ClickHouseQuery): Promise<{ rows: Row[]; rowsBeforeLimit: number }>;
  /**
   * A read whose answer depends only on the rows of `range`: answered again from memory while the parts that can
   * hold them stay the same (settled-reads.ts), read as `query` where the layout does not allow that. The rows may be
   * shared with other callers: they are not to be changed.
   */
  querySettled<Row>(query: ClickHouseQuery, range: SettledRange): Promise<Row[]>;
  /**
   * The result's bytes as the engine writes them, read as the stream is read (backpressure reaches the engine, so
   * memory does not grow with the result). Resolves once the query has started: a query the engine refuses rejects
   * here, before any byte; a failure later errors the stream.
   */
  stream(query: StreamedQuery): Promise<Readable>;
  insert(table: string, rows: readonly object[]): Promise<void>;
  /** Inserts rows already encoded as JSONCompactEachRow lines, their values in the order of `columns`. */
  insertLines(
    table: string,
    columns: readonly string[],
    lines: readonly string[],
    options?: InsertOptions,
  ): Promise<void>;
  command(sql: string, params?: Record<string, unknown>): Promise<void>;
  ping(): Promise<boolean>;
  close(): Promise<void>;
}

export interface ClickHouseServer {
  url: string;
  username: string;
  password: string;
  database: string;
  layout: ClickHouseLayout;
}

// ClickHouse error codes that mean "this query ran out of its budget": TIMEOUT_EXCEEDED, TOO_SLOW,
// MEMORY_LIMIT_EXCEEDED, TOO_MANY_ROWS_OR_BYTES / QUERY_WAS_CANCELLED.
const LIMIT_CODES = new Set(['159', '160', '241', '396', '394']);

// Error codes with which the engine refuses an insert's data rather than fails to store it: retrying the same
// rows cannot succeed. CANNOT_PARSE_* (6, 25, 26, 27, 32, 38, 41, 72, 73), TYPE_MISMATCH (53), ARGUMENT_OUT_OF_BOUND
// (69), CANNOT_CONVERT_TYPE (70), INCORRECT_DATA (117), TOO_LARGE_STRING_SIZE (131), VALUE_IS_OUT_OF_RANGE (321),
// CANNOT_PARSE_UUID (376). A missing table or column is not among them: that is the store's state, not the data's.
const INPUT_CODES = new Set([
  '6',
  '25',
  '26',
  '27',
  '32',
  '38',
  '41',
  '53',
  '69',
  '70',
  '72',
  '73',
  '117',
  '131',
  '321',
  '376',
]);

/** The ClickHouse error code behind a store error ('' when it has none). */
export const storeErrorCode = (error: unknown) => String((error as { cause?: { code?: unknown } }).cause?.code ?? '');

/** Whether a store error is the engine refusing the data itself (as opposed to being unavailable). */
export function isInputError(error: unknown): boolean {
  return INPUT_CODES.has(storeErrorCode(error));
}

/**
 * A ClickHouse failure is a 503 — the store could not answer (unreachable, or a table it cannot serve), and the
 * request may be retried — unless an insert's data is what the engine refused, which no retry can change: a 400.
 * (A query's or a command's refused value is the service's own bug, left a 503 with its cause in the log.) The
 * cause never goes into the response.
 */
function toStoreError(error: unknown, queryName: string, refusedDataIsInput = false): Error {
  const code = String((error as { code?: unknown }).code ?? '');
  if (refusedDataIsInput && INPUT_CODES.has(code)) {
    const refused = new AppError(400, 'validation_failed', `the store refused a value of this request (${queryName})`);
    refused.cause = error;
    return refused;
  }
  if (LIMIT_CODES.has(code)) {
    // The read's own time, spent (read-scope.ts): the statement's limit was what was left of it.
    if (readTimeLeftMs() <= 0) return readTimedOut(queryName);
    return new AppError(
      503,
      'unavailable',
      `query ${queryName} exceeded its time or memory limit; narrow the window and retry`,
      [],
      {
        'Retry-After': '5',
      },
    );
  }
  const unavailable = new StoreUnavailableError('clickhouse', `${queryName} failed`);
  unavailable.cause = error;
  return unavailable;
}

/**
 * Every statement states its limits, 0 meaning none, and its threads' nice value: the embedded engine keeps a
 * statement's settings for the session, so a report's limits would otherwise bind the inserts and queries that follow
 * it. A statement of a read (read-scope.ts) runs at the read's nice value.
 */
function limitSettings(limits: QueryLimits | undefined, maxExecutionSeconds = limits?.maxExecutionSeconds ?? 0) {
  return {
    max_execution_time: maxExecutionSeconds,
    max_memory_usage: String(limits?.maxMemoryBytes ?? 0),
    timeout_overflow_mode: 'throw',
    os_thread_priority: String(readNice()),
  } satisfies ClickHouseSettings;
}

/** The 503 of a read not answered within its time (READ_TIMEOUT_MS): the dashboard asks again. */
const readTimedOut = (queryName: string) =>
  new OverloadError(`the read was not answered within its time (at ${queryName}); retry`);

/** A statement's time in seconds within the read under way: at most what is left of the read's (read-scope.ts). */
const withinRead = (ownSeconds: number, leftMs = readTimeLeftMs()) =>
  Math.min(ownSeconds || Infinity, Math.max(leftMs, 1) / 1000);

/** A query's limits within a read: its time is at most what is left of the read's (read-scope.ts). */
function readLimitSettings(limits: QueryLimits | undefined, queryName: string) {
  const leftMs = readTimeLeftMs();
  if (leftMs === Infinity) return limitSettings(limits);
  if (leftMs <= 0) throw readTimedOut(queryName);
  return limitSettings(limits, withinRead(limits?.maxExecutionSeconds ?? 0, leftMs));
}

/** Rows as JSONCompactEachRow lines: one JSON array a row, its values in the order of `columns`. */
export function encodeRows(rows: readonly object[], columns: readonly string[]): string[] {
  // One array is reused for every row.
  const values: unknown[] = new Array(columns.length);
  const lines: string[] = new Array(rows.length);
  for (let r = 0; r < rows.length; r += 1) {
    const row = rows[r] as Record<string, unknown>;
    for (let c = 0; c < columns.length; c += 1) values[c] = row[columns[c]];
    lines[r] = JSON.stringify(values);
  }
  return lines;
}

/** How a store streams a result: through the HTTP client, or a session of the embedded engine (chdb-stream.ts). */
export type Streamer = (query: StreamedQuery, settings: ClickHouseSettings) => Promise<Readable>;

/** A server's result streamed as its HTTP response's body. */
const streamOverHttp =
  (client: ClickHouseClient): Streamer =>
  async ({ sql, params, format }, settings) =>
    (await client.exec({ query: `${sql}\nFORMAT ${format}`, query_params: params, clickhouse_settings: settings }))
      .stream;

function overClient(client: StatementClient, layout: ClickHouseLayout, streamer: Streamer): ClickHouseStore {
  async function insertLines(
    table: string,
    columns: readonly string[],
    lines: readonly string[],
    options: InsertOptions = {},
  ) {
    if (lines.length === 0) return;
    try {
      // The rows travel inline, after the statement, as JSONCompactEachRow text (about twice as fast for the
      // engine as JSONEachRow; and the client's own encoding would build every row twice more).
      const quoted = columns.map((column) => `\`${column}\``).join(', ');
      const statement = `INSERT INTO ${table} (${quoted}) FORMAT JSONCompactEachRow`;
      await client.command({
        query: `${statement}\n${lines.join('\n')}`,
        clickhouse_settings: {
          async_insert: options.serverBatched ? 1 : 0,
          wait_for_async_insert: 1,
          insert_deduplication_token: options.deduplicationToken ?? '',
          log_comment: `insert into ${table}`,
          ...limitSettings(undefined),
        },
      });
    } catch (error) {
      throw toStoreError(error, `insert into ${table}`, true);
    }
  }

  /** A read in the engine's JSON format: its rows, and the statistics the format carries beside them. */
  async function readIn<Result>(
    { name, sql, params, limits }: ClickHouseQuery,
    format: 'JSONEachRow' | 'JSON',
    extraSettings: ClickHouseSettings = {},
  ): Promise<Result> {
    const settings = readLimitSettings(limits, name);
    const abortSignal = readAbortSignal();
    try {
      const result = await client.query({
        query: sql,
        query_params: params,
        format,
        clickhouse_settings: { log_comment: name, ...settings, ...extraSettings },
        abort_signal: abortSignal,
      });
      return (await result.json()) as Result;
    } catch (error) {
      // No longer waited for: the read's time is up.
      if (abortSignal?.aborted) throw readTimedOut(name);
      throw toStoreError(error, name);
    }
  }

  const query = <Row>(statement: ClickHouseQuery) => readIn<Row[]>(statement, 'JSONEachRow');

  // Kept results are one server's: see settled-reads.ts. Both read through the store's `query` as it is when they
  // run, as every other read does.
  const settled = layout.topology === 'single' ? settledReads((read) => store.query(read)) : undefined;

  const store: ClickHouseStore = {
    layout,
    query,
    async queryCounted<Row>(statement: ClickHouseQuery) {
      const result = await readIn<{ data: Row[]; rows_before_limit_at_least?: number }>(statement, 'JSON', {
        exact_rows_before_limit: 1,
      });
      // The engine gives the statistic for a statement with a LIMIT only.
      if (result.rows_before_limit_at_least === undefined) throw new Error(`${statement.name} has no LIMIT to count`);
      return { rows: result.data, rowsBeforeLimit: Number(result.rows_before_limit_at_least) };
    },
    querySettled: settled ?? ((read) => store.query(read)),
    async stream(query) {
      try {
        return await streamer(query, { log_comment: query.name, ...limitSettings(query.limits), ...query.settings });
      } catch (error) {
        throw toStoreError(error, query.name);
      }
    },
    async insert(table, rows) {
      if (rows.length === 0) return;
      const columns = Object.keys(rows[0]);
      await insertLines(table, columns, encodeRows(rows, columns));
    },
    insertLines,
    async command(sql, params) {
      try {
        await client.command({
          query: sql,
          query_params: params,
          clickhouse_settings: { log_comment: 'command', ...limitSettings(undefined) },
        });
      } catch (error) {
        throw toStoreError(error, 'command');
      }
    },
    async ping() {
      try {
        return (await client.ping()).success;
      } catch {
        return false;
      }
    },
    close: () => client.close(),
  };
  return store;
}

/** DateTime64 values travel as `YYYY-MM-DD hh:mm:ss.mmm` in UTC. */
export const toClickHouseTime = (date: Date): string => {
  const iso = date.toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, 23)}`;
};
export const fromClickHouseTime = (text: string): Date => new Date(`${text.replace(' ', 'T')}Z`);

/**
 * Connections of the embedded engine, each running one statement at a time (chdb-pool.ts): reads take three, and a
 * flush's insert, a job or a health check finds the fourth.
 */
const EMBEDDED_CONNECTIONS = 4;

/**
 * How the embedded pool sees a statement: a read's statements are reads, and a read's statement has what is left of
 * the read's time when it starts on a connection, not when it was sent (its wait for the connection is not its own).
 */
const EMBEDDED_POLICY: PoolPolicy = {
  isRead: () => readTimeLeftMs() !== Infinity,
  atStart(settings) {
    if (readTimeLeftMs() === Infinity || settings === undefined) return settings;
    return { ...settings, max_execution_time: withinRead(Number(settings.max_execution_time)) };
  },
};

// 64-bit counts arrive as JSON numbers (exact below 2^53, far beyond any count or sum here).
const clientSettings: ClickHouseSettings = { output_format_json_quote_64bit_integers: 0 };

export async function openClickHouse(options: {
  server?: ClickHouseServer;
  dataDir: string;
}): Promise<ClickHouseStore> {
  if (options.server) {
    const { url, username, password, database, layout } = options.server;
    const settings = { ...clientSettings, ...layoutSettings(layout) };
    const client = createClient({
      url,
      username,
      password,
      database,
      request_timeout: 30_000,
      clickhouse_settings: settings,
      // The client's own logger writes each failed request to the console, as text lines among the service's JSON
      // log; the service logs a store's failure itself (with the error as its cause), as in embedded mode.
      log: { level: ClickHouseLogLevel.OFF },
    });
    return overClient(client, layout, streamOverHttp(client));
  }
  // Loaded only in embedded mode, so a deployment on real servers never loads the native engine.
  const { createChdbConnection } = await import('chdb/connection');
  const directory = path.join(options.dataDir, 'clickhouse');
  fs.mkdirSync(directory, { recursive: true });
  const clients = Array.from({ length: EMBEDDED_CONNECTIONS }, () =>
    createClient({
      connection: createChdbConnection({ path: directory }),
      clickhouse_settings: clientSettings,
    } as never),
  );
  return overClient(connectionPool(clients, EMBEDDED_POLICY), SINGLE, streamOverSession(directory));
}
