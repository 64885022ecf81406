// The Postgres store: one small interface over a real server (pg) or the embedded engine (PGlite).
import fs from 'node:fs';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import { StoreUnavailableError } from '../http/errors';

export interface Sql {
  /** Runs one parameterized statement ($1, $2, …) and returns its rows. */
  query<Row = Record<string, unknown>>(text: string, params?: readonly unknown[]): Promise<Row[]>;
}

export interface PostgresStore extends Sql {
  /** Runs `work` in one transaction; it commits when `work` resolves and rolls back when it throws. */
  transaction<T>(work: (tx: Sql) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

// SQLSTATE classes that mean "the server is not there or not accepting work", as opposed to a bad statement.
const UNAVAILABLE_SQLSTATE = /^(08|53|57P0[1-3])/;
const NETWORK_ERRORS = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND', 'EPIPE', 'EHOSTUNREACH']);

function toStoreError(error: unknown): unknown {
  const code = (error as { code?: string }).code ?? '';
  const message = (error as Error).message ?? '';
  if (NETWORK_ERRORS.has(code) || UNAVAILABLE_SQLSTATE.test(code) || /timeout|terminated|Connection terminated/i.test(message)) {
    // The cause goes to the log with the 503; the client learns only that the store did not answer.
    const unavailable = new StoreUnavailableError('postgres', 'no answer');
    unavailable.cause = error;
    return unavailable;
  }
  return error;
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
        return result;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw toStoreError(error);
      } finally {
        client.release();
      }
    },
    close: () => pool.end(),
  };
}

function fromPglite(db: PGlite): PostgresStore {
  return {
    query: async (text, params) => (await db.query(text, params as unknown[])).rows as never[],
    transaction: (work) => db.transaction((tx) => work({ query: async (text, params) => (await tx.query(text, params as unknown[])).rows as never[] })),
    close: () => db.close(),
  };
}

export async function openPostgres(options: { url?: string; dataDir: string }): Promise<PostgresStore> {
  if (options.url) {
    const pool = new pg.Pool({ connectionString: options.url, max: 10, connectionTimeoutMillis: 5000, query_timeout: 30000 });
    // An idle client losing its server must not crash the process; the next query reports the outage.
    pool.on('error', () => undefined);
    return fromPool(pool);
  }
  const directory = path.join(options.dataDir, 'postgres');
  fs.mkdirSync(directory, { recursive: true });
  return fromPglite(await PGlite.create(directory));
}
