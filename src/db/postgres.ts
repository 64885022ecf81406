// The Postgres store: one small interface over a real server (pg) or the embedded engine (PGlite).
import fs from 'node:fs';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import { AppError, StoreUnavailableError } from '../errors';
import { copyTemplate } from './pglite-template';

export interface Sql {
  /** Runs one parameterized statement ($1, $2, …) and returns its rows. */
  query<Row = Record<string, unknown>>(text: string, params?: readonly unknown[]): Promise<Row[]>;
}

export interface PostgresStore extends Sql {
  /** Runs `work` in one transaction; it commits when `work` resolves and rolls back when it throws. */
  transaction<T>(work: (tx: Sql) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/** How long a call waits on a Postgres server: for a connection, and for a statement's answer. */
export interface PostgresTimeouts {
  connectMs: number;
  queryMs: number;
}

// Postgres could not be reached or did not answer: network errors, pg's timeouts and lost connections, PGlite
// closed (during a stop).
const NETWORK_ERRORS = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND', 'EPIPE', 'EHOSTUNREACH']);
const NO_ANSWER_MESSAGE = /timeout|terminated|PGlite is clos/i;
// Postgres answered that it cannot do the work now, as opposed to a bad statement: connection exceptions (08),
// insufficient resources (53: a full disk, out of memory, too many connections), a statement cancelled by
// statement_timeout (57014), shutdowns (57P01–57P03), failures of the system under it (58: I/O, missing files), and
// failures on one of its own files whatever SQLSTATE the errno got (a read-only directory is 42501, "insufficient
// privilege").
const CANNOT_WORK_SQLSTATE = /^(08|53|57014|57P0[1-3]|58)/;
const FILE_FAILURE_MESSAGE = /could not \w+ (file|directory) "/;

/** Why Postgres is unavailable, if that is what the error says; undefined for a bad statement or a bug. */
function unavailability(error: unknown): string | undefined {
  const code = (error as { code?: string }).code ?? '';
  const message = (error as Error).message ?? '';
  if (NETWORK_ERRORS.has(code) || NO_ANSWER_MESSAGE.test(message)) return 'no answer';
  if (CANNOT_WORK_SQLSTATE.test(code) || FILE_FAILURE_MESSAGE.test(message)) return 'it cannot do the work now';
  return undefined;
}

function toStoreError(error: unknown): unknown {
  const reason = error instanceof AppError ? undefined : unavailability(error);
  if (reason === undefined) return error;
  // The cause goes to the log with the 503; the client learns only that the store could not serve it.
  const unavailable = new StoreUnavailableError('postgres', reason);
  unavailable.cause = error;
  return unavailable;
}

async function mapErrors<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw toStoreError(error);
  }
}

function fromPool(pool: pg.Pool): PostgresStore {
  const over = (client: pg.Pool | pg.PoolClient): Sql => ({
    query: (text, params) => mapErrors(async () => (await client.query(text, params as unknown[])).rows),
  });
  return {
    ...over(pool),
    async transaction(work) {
      const client = await mapErrors(() => pool.connect());
      try {
        await client.query('BEGIN');
        const result = await work(over(client));
        await client.query('COMMIT');
        client.release();
        return result;
      } catch (error) {
        const mapped = toStoreError(error);
        // A connection that failed is dropped rather than rolled back (a ROLLBACK would wait out another timeout):
        // the server ends its transaction with it.
        if (mapped instanceof StoreUnavailableError) client.release(true);
        else
          await client.query('ROLLBACK').then(
            () => client.release(),
            (rollbackError: Error) => client.release(rollbackError),
          );
        throw mapped;
      }
    },
    close: () => pool.end(),
  };
}

function fromPglite(db: PGlite): PostgresStore {
  const over = (client: Pick<PGlite, 'query'>): Sql => ({
    query: (text, params) => mapErrors(async () => (await client.query(text, params as unknown[])).rows as never[]),
  });
  return {
    ...over(db),
    transaction: (work) => mapErrors(() => db.transaction((tx) => work(over(tx)))),
    close: () => db.close(),
  };
}

// The server cancels a slow statement itself (statement_timeout), which keeps its connection usable; the client
// gives up this much later, only when the server says nothing at all, and drops that connection.
const SILENT_SERVER_MARGIN_MS = 1000;

function openPool(url: string, { connectMs, queryMs }: PostgresTimeouts): PostgresStore {
  const pool = new pg.Pool({
    connectionString: url,
    max: 10,
    connectionTimeoutMillis: connectMs,
    statement_timeout: queryMs,
    query_timeout: queryMs + SILENT_SERVER_MARGIN_MS,
  });
  // An idle client losing its server must not crash the process; the next query reports the outage.
  pool.on('error', () => undefined);
  return fromPool(pool);
}

// What the embedded Postgres reserves, all of it resident from the start: initdb sizes it for a server (128 MB of
// shared buffers, 100 connections), ~150 MB more than its small tables (accounts, alert rules) need in one
// connection; the operating system caches their files anyway.
const PGLITE_SETTINGS = ['shared_buffers=16MB', 'wal_buffers=1MB', 'max_connections=5'];

async function openPglite(dataDir: string): Promise<PostgresStore> {
  const directory = path.join(dataDir, 'postgres');
  if (!copyTemplate(directory)) fs.mkdirSync(directory, { recursive: true });
  const startParams = [...PGlite.defaultStartParams, ...PGLITE_SETTINGS.flatMap((setting) => ['-c', setting])];
  return fromPglite(await PGlite.create(directory, { startParams }));
}

export async function openPostgres(options: {
  url?: string;
  dataDir: string;
  timeouts: PostgresTimeouts;
}): Promise<PostgresStore> {
  return options.url ? openPool(options.url, options.timeouts) : openPglite(options.dataDir);
}
