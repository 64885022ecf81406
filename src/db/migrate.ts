// Applies the numbered SQL files of schema/postgres and schema/clickhouse in order, each once, recorded.
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import type { ClickHouseStore } from './clickhouse';
import type { PostgresStore, Sql } from './postgres';

const SCHEMA_DIR = path.resolve(__dirname, '..', '..', 'schema');
// Any fixed number; every instance takes the same lock, so two starting together apply each file once.
const MIGRATION_LOCK_KEY = 0x72756e77;

interface Migration {
  version: string;
  statements: string[];
}

function readMigrations(store: 'postgres' | 'clickhouse'): Migration[] {
  const directory = path.join(SCHEMA_DIR, store);
  return fs
    .readdirSync(directory)
    .filter((file) => /^\d+_.+\.sql$/.test(file))
    .sort()
    .map((file) => ({
      version: file.replace(/\.sql$/, ''),
      // ClickHouse takes one statement per request, so files are split on the `;` ending a line.
      statements: fs
        .readFileSync(path.join(directory, file), 'utf8')
        .split(/;\s*$/m)
        .map((statement) => statement.replace(/^\s*--.*$/gm, '').trim())
        .filter(Boolean),
    }));
}

async function migratePostgres(tx: Sql, log: Logger): Promise<void> {
  await tx.query(
    `CREATE TABLE IF NOT EXISTS schema_migrations
       (version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`,
  );
  const applied = new Set(
    (await tx.query<{ version: string }>('SELECT version FROM schema_migrations')).map((row) => row.version),
  );
  for (const migration of readMigrations('postgres').filter((m) => !applied.has(m.version))) {
    for (const statement of migration.statements) await tx.query(statement);
    await tx.query('INSERT INTO schema_migrations (version) VALUES ($1)', [migration.version]);
    log.info({ store: 'postgres', version: migration.version }, 'migration applied');
  }
}

async function migrateClickHouse(ch: ClickHouseStore, log: Logger): Promise<void> {
  await ch.command(
    `CREATE TABLE IF NOT EXISTS schema_migrations (version String, applied_at DateTime64(3) DEFAULT now64(3))
       ENGINE = MergeTree ORDER BY version`,
  );
  const rows = await ch.query<{ version: string }>({
    name: 'migrations',
    sql: 'SELECT version FROM schema_migrations',
  });
  const applied = new Set(rows.map((row) => row.version));
  for (const migration of readMigrations('clickhouse').filter((m) => !applied.has(m.version))) {
    for (const statement of migration.statements) await ch.command(statement);
    await ch.insert('schema_migrations', [{ version: migration.version }]);
    log.info({ store: 'clickhouse', version: migration.version }, 'migration applied');
  }
}

/** Both stores migrate under one Postgres advisory lock, held for the whole transaction. */
export async function migrate(pg: PostgresStore, ch: ClickHouseStore, log: Logger): Promise<void> {
  await pg.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY]);
    await migratePostgres(tx, log);
    await migrateClickHouse(ch, log);
  });
}
