// The ClickHouse store: one small interface over a real server or the embedded engine (chdb).
import fs from 'node:fs';
import path from 'node:path';
import { createClient, type ClickHouseClient, type ClickHouseSettings } from '@clickhouse/client';
import { AppError, StoreUnavailableError } from '../http/errors';

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

export interface ClickHouseStore {
  query<Row>(query: ClickHouseQuery): Promise<Row[]>;
  insert(table: string, rows: readonly object[]): Promise<void>;
  command(sql: string, params?: Record<string, unknown>): Promise<void>;
  ping(): Promise<boolean>;
  close(): Promise<void>;
}

export interface ClickHouseServer {
  url: string;
  username: string;
  password: string;
  database: string;
}

// ClickHouse error codes that mean "this query ran out of its budget": TIMEOUT_EXCEEDED, TOO_SLOW,
// MEMORY_LIMIT_EXCEEDED, TOO_MANY_ROWS_OR_BYTES / QUERY_WAS_CANCELLED.
const LIMIT_CODES = new Set(['159', '160', '241', '396', '394']);

/**
 * Every ClickHouse failure is a 503: the store could not answer (unreachable, or a table it cannot serve),
 * and the request may be retried. The cause goes to the log with the 503, never into the response.
 */
function toStoreError(error: unknown, queryName: string): Error {
  const code = String((error as { code?: unknown }).code ?? '');
  if (LIMIT_CODES.has(code)) {
    return new AppError(503, 'unavailable', `query ${queryName} exceeded its time or memory limit; narrow the window and retry`, [], {
      'Retry-After': '5',
    });
  }
  const unavailable = new StoreUnavailableError('clickhouse', `${queryName} failed`);
  unavailable.cause = error;
  return unavailable;
}

/**
 * Every statement states its limits, 0 meaning none: the embedded engine keeps a statement's settings for the
 * session, so a report's limits would otherwise bind the inserts and queries that follow it.
 */
function limitSettings(limits: QueryLimits | undefined): ClickHouseSettings {
  return {
    max_execution_time: limits?.maxExecutionSeconds ?? 0,
    max_memory_usage: String(limits?.maxMemoryBytes ?? 0),
    timeout_overflow_mode: 'throw',
  };
}

/** One JSON array a line, its values in the order of `columns`; one array is reused for every row. */
function toJsonCompactRows(rows: readonly object[], columns: readonly string[]): string {
  const values: unknown[] = new Array(columns.length);
  const lines: string[] = new Array(rows.length);
  for (let r = 0; r < rows.length; r += 1) {
    const row = rows[r] as Record<string, unknown>;
    for (let c = 0; c < columns.length; c += 1) values[c] = row[columns[c]];
    lines[r] = JSON.stringify(values);
  }
  return lines.join('\n');
}

function overClient(client: ClickHouseClient): ClickHouseStore {
  return {
    async query<Row>({ name, sql, params, limits }: ClickHouseQuery) {
      try {
        const result = await client.query({
          query: sql,
          query_params: params,
          format: 'JSONEachRow',
          clickhouse_settings: { log_comment: name, ...limitSettings(limits) },
        });
        return await result.json<Row>();
      } catch (error) {
        throw toStoreError(error, name);
      }
    },
    async insert(table, rows) {
      if (rows.length === 0) return;
      try {
        // Synchronous inserts: the acknowledgement to the client waits for this one. The rows travel inline, after
        // the statement, as JSONCompactEachRow text built here in one pass (about twice as fast for the engine as
        // JSONEachRow; and the client's own encoding would build every row twice more, as an array and a string).
        const columns = Object.keys(rows[0]);
        const statement = `INSERT INTO ${table} (${columns.map((column) => `\`${column}\``).join(', ')}) FORMAT JSONCompactEachRow`;
        await client.command({
          query: `${statement}\n${toJsonCompactRows(rows, columns)}`,
          clickhouse_settings: { async_insert: 0, log_comment: `insert into ${table}`, ...limitSettings(undefined) },
        });
      } catch (error) {
        throw toStoreError(error, `insert into ${table}`);
      }
    },
    async command(sql, params) {
      try {
        await client.command({ query: sql, query_params: params, clickhouse_settings: { log_comment: 'command', ...limitSettings(undefined) } });
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
}

/** DateTime64 values travel as `YYYY-MM-DD hh:mm:ss.mmm` in UTC. */
export const toClickHouseTime = (date: Date): string => date.toISOString().replace('T', ' ').replace('Z', '');
export const fromClickHouseTime = (text: string): Date => new Date(`${text.replace(' ', 'T')}Z`);

// 64-bit counts arrive as JSON numbers (exact below 2^53, far beyond any count or sum here).
const clientSettings: ClickHouseSettings = { output_format_json_quote_64bit_integers: 0 };

export async function openClickHouse(options: { server?: ClickHouseServer; dataDir: string }): Promise<ClickHouseStore> {
  if (options.server) {
    const { url, username, password, database } = options.server;
    return overClient(createClient({ url, username, password, database, request_timeout: 30_000, clickhouse_settings: clientSettings }));
  }
  // Loaded only in embedded mode, so a deployment on real servers never loads the native engine.
  const { createChdbConnection } = await import('chdb/connection');
  const directory = path.join(options.dataDir, 'clickhouse');
  fs.mkdirSync(directory, { recursive: true });
  return overClient(createClient({ connection: createChdbConnection({ path: directory }), clickhouse_settings: clientSettings } as never));
}
