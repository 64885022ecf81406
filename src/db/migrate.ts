// Applies the numbered SQL files of schema/postgres and schema/clickhouse in order, each once, recorded; the
// ClickHouse files rendered for the server's topology (topology.ts).
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import { storeErrorCode, type ClickHouseStore } from './clickhouse';
import type { PostgresStore, Sql } from './postgres';
import {
  appliedVersions,
  createdTables,
  migrationsTable,
  renderMigration,
  SINGLE,
  statementsOf,
  type ClickHouseLayout,
} from './topology';

const SCHEMA_DIR = path.resolve(__dirname, '..', '..', 'schema');
// Any fixed number; every instance takes the same lock, so two starting together apply each file once.
const MIGRATION_LOCK_KEY = 0x72756e77;

interface Migration {
  version: string;
  statements: string[];
}

interface MigrationFile {
  version: string;
  text: string;
}

export function readMigrationFiles(store: 'postgres' | 'clickhouse'): MigrationFile[] {
  const directory = path.join(SCHEMA_DIR, store);
  return fs
    .readdirSync(directory)
    .filter((file) => /^\d+_.+\.sql$/.test(file))
    .sort()
    .map((file) => ({
      version: file.replace(/\.sql$/, ''),
      text: fs.readFileSync(path.join(directory, file), 'utf8'),
    }));
}

/** The migrations of a store, each rendered for the layout (ClickHouse; Postgres has one). */
function readMigrations(store: 'postgres' | 'clickhouse', layout: ClickHouseLayout = SINGLE): Migration[] {
  const files = readMigrationFiles(store);
  const tables = createdTables(files.map((file) => file.text));
  return files.map(({ version, text }) => ({
    version,
    statements: statementsOf(renderMigration(text, layout, tables)),
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

/**
 * Refuses a server laid out otherwise than configured: its migrations table says how the schema was created (a
 * MergeTree on one server, a ReplicatedMergeTree on a cluster, a SharedMergeTree on ClickHouse Cloud), and a cluster
 * layout needs its cluster, with one shard (replicated) or several (sharded), and the {shard} and {replica} macros.
 */
export async function checkTopology(ch: ClickHouseStore): Promise<void> {
  const { topology, cluster } = ch.layout;
  const refuse = (found: string) => {
    throw new Error(`CLICKHOUSE_TOPOLOGY=${topology} but the ClickHouse server ${found}`);
  };
  if (topology === 'replicated' || topology === 'sharded') {
    const [layout] = await ch.query<{ shards: number; macros: number }>({
      name: 'migrations.cluster',
      sql: `SELECT (SELECT uniq(shard_num) FROM system.clusters WHERE cluster = {cluster:String}) AS shards,
                   (SELECT count() FROM system.macros WHERE macro IN ('shard', 'replica')) AS macros`,
      params: { cluster },
    });
    if (Number(layout.shards) === 0) refuse(`has no cluster ${cluster} (CLICKHOUSE_CLUSTER)`);
    if (topology === 'replicated' && Number(layout.shards) > 1) refuse(`cluster ${cluster} has several shards`);
    if (topology === 'sharded' && Number(layout.shards) < 2) refuse(`cluster ${cluster} has one shard`);
    if (Number(layout.macros) < 2) refuse('defines no {shard} and {replica} macros');
  }
  const [table] = await ch.query<{ engine: string }>({
    name: 'migrations.engine',
    sql: `SELECT engine FROM system.tables WHERE database = currentDatabase() AND name = 'schema_migrations'`,
  });
  const expected = { single: 'MergeTree', cloud: 'SharedMergeTree', replicated: 'ReplicatedMergeTree' }[
    topology === 'sharded' ? 'replicated' : topology
  ];
  if (table && table.engine !== expected) refuse(`holds a schema made for another topology (${table.engine} tables)`);
}

// ClickHouse's code for a setting it does not know.
const UNKNOWN_SETTING = '115';
// A text index added (ClickHouse 26.2 and later: before, behind an experimental setting), and an index materialized.
const ADDS_TEXT_INDEX = /\bADD INDEX IF NOT EXISTS \w+ [\s\S]*\bTYPE text\(/;
const MATERIALIZES_INDEX = /\bMATERIALIZE INDEX (\w+)\b/;

/** Whether a table of the current database has a skip index of that name. */
async function hasIndex(ch: ClickHouseStore, name: string): Promise<boolean> {
  const [found] = await ch.query<{ n: number }>({
    name: 'migrations.index',
    sql: `SELECT count() AS n FROM system.data_skipping_indices
          WHERE database = currentDatabase() AND name = {name:String}`,
    params: { name },
  });
  return Number(found.n) > 0;
}

/**
 * Why a failed statement may be skipped, or undefined when it stops the migration. A table setting the server does
 * not know yet (a newer server's tuning, such as 0010's) leaves the table at the server's default; a text index the
 * server cannot add (0012's, on a server before 26.2), and its materialization, leave the filters it serves reading
 * rows. Either way the service answers the same, slower. An index's materialization is skipped only when the index
 * is not there: one that fails on an index that is stops the migration.
 */
async function skippable(ch: ClickHouseStore, statement: string, error: unknown): Promise<string | undefined> {
  if (/\bMODIFY SETTING\b/.test(statement) && storeErrorCode(error) === UNKNOWN_SETTING) {
    return 'the ClickHouse server does not know this table setting';
  }
  if (ADDS_TEXT_INDEX.test(statement)) return 'the ClickHouse server cannot add this text index';
  const materialized = MATERIALIZES_INDEX.exec(statement);
  if (materialized && !(await hasIndex(ch, materialized[1]))) return 'the index was not added';
  return undefined;
}

/** Runs a migration's statement; one that fails for a reason of `skippable`'s is skipped with a warning. */
export async function runClickHouseStatement(ch: ClickHouseStore, statement: string, log: Logger): Promise<void> {
  try {
    await ch.command(statement);
  } catch (error) {
    const reason = await skippable(ch, statement, error);
    if (reason === undefined) throw error;
    log.warn({ err: error, statement }, `migration: ${reason}; skipped`);
  }
}

async function migrateClickHouse(ch: ClickHouseStore, log: Logger): Promise<void> {
  await ch.command(migrationsTable(ch.layout));
  await checkTopology(ch);
  const rows = await ch.query<{ version: string }>({ name: 'migrations', sql: appliedVersions(ch.layout) });
  const applied = new Set(rows.map((row) => row.version));
  for (const migration of readMigrations('clickhouse', ch.layout).filter((m) => !applied.has(m.version))) {
    // On a cluster each statement returns once every host has run it (layoutSettings: the distributed DDL queue).
    for (const statement of migration.statements) await runClickHouseStatement(ch, statement, log);
    await ch.insert('schema_migrations', [{ version: migration.version }]);
    log.info({ store: 'clickhouse', version: migration.version }, 'migration applied');
  }
}

// Another instance may hold the lock for as long as its migrations take (materializing a projection over a large
// table takes minutes): the lock is asked for again and again, each ask a quick statement, rather than waited for in
// one statement that the query timeouts would cut short.
const LOCK_RETRY_MS = 200;
const LOCK_WAIT_MS = 30 * 60_000;

async function takeMigrationLock(tx: Sql, log: Logger): Promise<void> {
  const giveUpAt = Date.now() + LOCK_WAIT_MS;
  for (let waited = false; ; waited = true) {
    const [{ locked }] = await tx.query<{ locked: boolean }>('SELECT pg_try_advisory_xact_lock($1) AS locked', [
      MIGRATION_LOCK_KEY,
    ]);
    if (locked) return;
    if (Date.now() > giveUpAt) throw new Error('another instance has been migrating the stores for 30 minutes');
    if (!waited) log.info('waiting for another instance to finish migrating the stores');
    await new Promise((resolve) => setTimeout(resolve, LOCK_RETRY_MS));
  }
}

/** Whether both stores have every migration already; false when that cannot be read (a store never migrated). */
async function upToDate(pg: PostgresStore, ch: ClickHouseStore): Promise<boolean> {
  const versions = (rows: { version: string }[]) => new Set(rows.map((row) => row.version));
  try {
    const postgres = versions(await pg.query<{ version: string }>('SELECT version FROM schema_migrations'));
    if (readMigrationFiles('postgres').some((file) => !postgres.has(file.version))) return false;
    // Asked first: the HTTP client logs every failed statement, and a new server has no migrations table yet.
    const [table] = await ch.query<{ n: number }>({
      name: 'migrations.exists',
      sql: `SELECT count() AS n FROM system.tables WHERE database = currentDatabase() AND name = 'schema_migrations'`,
    });
    if (Number(table.n) === 0) return false;
    const clickhouse = versions(await ch.query({ name: 'migrations', sql: appliedVersions(ch.layout) }));
    return readMigrationFiles('clickhouse').every((file) => clickhouse.has(file.version));
  } catch {
    return false;
  }
}

/**
 * Both stores migrate under one Postgres advisory lock, held for the whole transaction. Instances that start on
 * stores already up to date (a restart, a scale-out) take no lock: they would wait for each other for nothing.
 */
export async function migrate(pg: PostgresStore, ch: ClickHouseStore, log: Logger): Promise<void> {
  if (await upToDate(pg, ch)) return checkTopology(ch);
  await pg.transaction(async (tx) => {
    await takeMigrationLock(tx, log);
    await migratePostgres(tx, log);
    await migrateClickHouse(ch, log);
  });
}
