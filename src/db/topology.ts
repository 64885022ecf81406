// ClickHouse topologies (docs/scale-out.md#clickhouse-topologies): the migrations of schema/clickhouse are written
// for one server, and rendered here for the others. One source, four renderings:
// - single: the files as they are;
// - cloud: ClickHouse Cloud, which turns every MergeTree into a SharedMergeTree itself: the single-server DDL, with
//   the replicated name of the insert de-duplication window and mutations that wait for every replica;
// - replicated: one shard of replicas: Replicated*MergeTree engines on the server's {shard} and {replica} macros,
//   every statement ON CLUSTER;
// - sharded: the replicated tables as `<table>_local` on every shard, and a Distributed table under the table's own
//   name over them, sharded by the run, so that a run's row, its steps, its live rows and its scores are on one shard
//   (queries then read through the Distributed tables with subqueries on the local tables: DISTRIBUTED_SETTINGS).

export const TOPOLOGIES = ['single', 'replicated', 'sharded', 'cloud'] as const;
export type Topology = (typeof TOPOLOGIES)[number];

export interface ClickHouseLayout {
  topology: Topology;
  /** The cluster of ON CLUSTER statements and Distributed tables (replicated and sharded). */
  cluster: string;
}

export const SINGLE: ClickHouseLayout = { topology: 'single', cluster: 'runwatch' };

/** Where a replicated table keeps its replication log in Keeper: one path per shard and table. */
const REPLICA_PATH = `'/clickhouse/tables/{shard}/{database}/{table}', '{replica}'`;
// The migrations table is one log for the whole cluster: every node, of every shard, is a replica of it.
const MIGRATIONS_REPLICA_PATH = `'/clickhouse/tables/all/{database}/schema_migrations', '{replica}'`;

/** ClickHouse takes one statement per request: a file is split on the `;` that ends a line, comments dropped. */
export function statementsOf(text: string): string[] {
  return text
    .split(/;\s*$/m)
    .map((statement) => statement.replace(/^\s*--.*$/gm, '').trim())
    .filter(Boolean);
}

/** The tables a set of migrations creates (materialized views aside): the ones sharding renames. */
export function createdTables(texts: readonly string[]): string[] {
  return texts.flatMap((text) =>
    statementsOf(text).flatMap((statement) => {
      const match = /^CREATE TABLE IF NOT EXISTS (\w+)/.exec(statement);
      return match ? [match[1]] : [];
    }),
  );
}

/**
 * The sharding key of a table: its run (the project and the run's id), so that every row of a run is on one shard;
 * a table of something else is sharded by the id in its sorting key, else by project, else at random.
 */
export function shardingKey(statement: string): string {
  const columns = (/ORDER BY \(([^)]*)\)/.exec(statement)?.[1] ?? '').split(',').map((column) => column.trim());
  const id = ['run_id', 'id', 'trace_id'].find((column) => columns.includes(column));
  if (columns.includes('project_id')) return id ? `cityHash64(project_id, ${id})` : 'cityHash64(project_id)';
  return 'rand()';
}

const replicatedEngine = (statement: string, path: string) =>
  statement.replace(
    /ENGINE = (\w*)MergeTree(?:\(([^)]*)\))?/,
    (_, kind: string, args?: string) => `ENGINE = Replicated${kind}MergeTree(${path}${args ? `, ${args}` : ''})`,
  );

/** What every topology but `single` changes: replicated de-duplication, and mutations waiting for all replicas. */
const replicatedSettings = (statement: string) =>
  statement
    .replace(/\bnon_replicated_deduplication_window\b/g, 'replicated_deduplication_window')
    .replace(/\bmutations_sync = 1\b/g, 'mutations_sync = 2');

// Column changes a Distributed table takes too (its columns must match its local table's).
const COLUMN_CHANGE = /^(ADD|DROP|MODIFY|RENAME|COMMENT) COLUMN\b/;

/** One statement of a migration, rendered: one or more statements. */
function renderStatement(statement: string, layout: ClickHouseLayout, tables: ReadonlySet<string>): string[] {
  const { topology, cluster } = layout;
  const onCluster = `ON CLUSTER ${cluster}`;
  const sharded = topology === 'sharded';
  const local = (table: string) => (sharded && tables.has(table) ? `${table}_local` : table);
  let rendered = replicatedSettings(statement);
  if (topology === 'cloud') return [rendered];

  const create = /^CREATE TABLE IF NOT EXISTS (\w+)/.exec(rendered);
  if (create) {
    const table = create[1];
    rendered = replicatedEngine(rendered, REPLICA_PATH)
      .replace(/^CREATE TABLE IF NOT EXISTS \w+/, `CREATE TABLE IF NOT EXISTS ${local(table)} ${onCluster}`)
      .replace(/^(CREATE TABLE IF NOT EXISTS \w+ ON CLUSTER \w+ AS )(\w+)/, (_, head: string, source: string) =>
        head.concat(local(source)),
      );
    if (!sharded) return [rendered];
    const distributed =
      `CREATE TABLE IF NOT EXISTS ${table} ${onCluster} AS ${local(table)}\n` +
      `ENGINE = Distributed(${cluster}, currentDatabase(), ${local(table)}, ${shardingKey(statement)})`;
    return [rendered, distributed];
  }

  const view = /^CREATE MATERIALIZED VIEW IF NOT EXISTS (\w+) TO (\w+) AS ([\s\S]*\bFROM )(\w+)/.exec(rendered);
  if (view) {
    // A view on the local tables: it sees the rows each shard receives, and writes them beside them.
    const [whole, name, target, select, source] = view;
    const head = `CREATE MATERIALIZED VIEW IF NOT EXISTS ${name} ${onCluster} TO ${local(target)} AS ${select}`;
    return [rendered.replace(whole, head + local(source))];
  }

  // A backfill runs once, on whichever node the runner reaches: through the Distributed tables on a sharded cluster,
  // whose shards then run their own views; replicated tables copy it to their replicas.
  if (/^INSERT INTO \w+\s/.test(rendered)) return [rendered];

  const alter = /^ALTER TABLE (\w+) ([\s\S]*)$/.exec(rendered);
  if (alter) {
    const [, table, change] = alter;
    const statements = [`ALTER TABLE ${local(table)} ${onCluster} ${change}`];
    if (local(table) !== table && COLUMN_CHANGE.test(change))
      statements.push(`ALTER TABLE ${table} ${onCluster} ${change}`);
    return statements;
  }
  throw new Error(`no ${topology} rendering for this statement: ${statement.slice(0, 80)}`);
}

/**
 * A migration file as `layout` takes it. `tables`: every table the migrations create (createdTables of all files),
 * since a file may alter a table an earlier file created. `single` is the file itself, byte for byte.
 */
export function renderMigration(text: string, layout: ClickHouseLayout, tables: readonly string[]): string {
  if (layout.topology === 'single') return text;
  const known = new Set(tables);
  return statementsOf(text)
    .flatMap((statement) => renderStatement(statement, layout, known))
    .map((statement) => `${statement};\n`)
    .join('\n');
}

/** The runner's record of applied migrations, in the layout's terms. */
export function migrationsTable(layout: ClickHouseLayout): string {
  const columns = 'version String, applied_at DateTime64(3) DEFAULT now64(3)';
  if (layout.topology === 'single' || layout.topology === 'cloud') {
    return `CREATE TABLE IF NOT EXISTS schema_migrations (${columns})\n  ENGINE = MergeTree ORDER BY version`;
  }
  return (
    `CREATE TABLE IF NOT EXISTS schema_migrations ON CLUSTER ${layout.cluster} (${columns})\n` +
    `  ENGINE = ReplicatedMergeTree(${MIGRATIONS_REPLICA_PATH}) ORDER BY version`
  );
}

/**
 * The versions applied. On a cluster, every replica's copy is read: a version recorded through one node counts at
 * once, whichever node the runner reaches next (replication may not have brought it there yet).
 */
export function appliedVersions(layout: ClickHouseLayout): string {
  if (layout.topology === 'single' || layout.topology === 'cloud') return 'SELECT version FROM schema_migrations';
  return `SELECT DISTINCT version FROM clusterAllReplicas(${layout.cluster}, currentDatabase(), schema_migrations)`;
}

/**
 * Session settings of the layout. On a cluster, DDL waits for every host and fails when one fails. Sharded: inserts
 * into a Distributed table return once the shards have the rows (not when queued for them); and a subquery over a
 * Distributed table inside a query over one reads each shard's local table (distributed_product_mode = local),
 * which is right because a run's rows are all on one shard.
 */
export function layoutSettings(layout: ClickHouseLayout): Record<string, string | number> {
  if (layout.topology === 'single' || layout.topology === 'cloud') return {};
  const ddl = { distributed_ddl_output_mode: 'throw', distributed_ddl_task_timeout: 600 };
  if (layout.topology === 'replicated') return ddl;
  return { ...ddl, distributed_product_mode: 'local', distributed_foreground_insert: 1 };
}

/** What `DELETE FROM` names for a table: on a sharded cluster, its local tables on every shard. */
export function deletionTarget(layout: ClickHouseLayout, table: string): string {
  return layout.topology === 'sharded' ? `${table}_local ON CLUSTER ${layout.cluster}` : table;
}
