// ClickHouse topologies (src/db/topology.ts): the migrations as each topology receives them, kept as golden files
// (test/db/golden/<topology>/*.sql), so that a change to a migration or to the rendering shows up in review as the
// DDL a cluster gets. `UPDATE_GOLDEN=1 npm test -- test/db/topology.test.ts` writes them anew. The single-server
// rendering is the migration files byte for byte; a server laid out otherwise than configured is refused.
import fs from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../../src/config';
import { checkTopology, readMigrationFiles } from '../../src/db/migrate';
import {
  createdTables,
  migrationsTable,
  renderMigration,
  shardingKey,
  statementsOf,
  TOPOLOGIES,
  type ClickHouseLayout,
} from '../../src/db/topology';
import { startTestApp, type TestApp } from '../support/app';

const GOLDEN = path.join(__dirname, 'golden');
const update = process.env.UPDATE_GOLDEN === '1';
const files = readMigrationFiles('clickhouse');
const tables = createdTables(files.map((file) => file.text));
const layoutOf = (topology: ClickHouseLayout['topology']): ClickHouseLayout => ({ topology, cluster: 'runwatch' });

/** Every rendering of a topology: each migration, and the runner's migrations table. */
function renderings(topology: ClickHouseLayout['topology']): Record<string, string> {
  const layout = layoutOf(topology);
  return {
    ...Object.fromEntries(files.map((file) => [`${file.version}.sql`, renderMigration(file.text, layout, tables)])),
    'schema_migrations.sql': `${migrationsTable(layout)};\n`,
  };
}

describe.each(TOPOLOGIES.filter((topology) => topology !== 'single'))('%s', (topology) => {
  const rendered = renderings(topology);
  const directory = path.join(GOLDEN, topology);
  if (update) {
    fs.rmSync(directory, { recursive: true, force: true });
    fs.mkdirSync(directory, { recursive: true });
    for (const [name, text] of Object.entries(rendered)) fs.writeFileSync(path.join(directory, name), text);
  }

  it.each(Object.keys(rendered))('%s renders as its golden file', (name) => {
    const file = path.join(directory, name);
    const golden = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : `(no ${file}: run with UPDATE_GOLDEN=1)`;
    expect(rendered[name]).toBe(golden);
  });

  it('every golden file belongs to a rendering', () => {
    expect(fs.readdirSync(directory).sort()).toEqual(Object.keys(rendered).sort());
  });
});

it('single: every migration is the file itself, byte for byte', () => {
  for (const file of files) expect(renderMigration(file.text, layoutOf('single'), tables)).toBe(file.text);
});

it('replicated and sharded: every statement but a backfill runs ON CLUSTER, every table is replicated', () => {
  for (const topology of ['replicated', 'sharded'] as const) {
    const statements = files.flatMap((file) => statementsOf(renderMigration(file.text, layoutOf(topology), tables)));
    // A backfill (INSERT … SELECT) runs once, through one node: replication and the Distributed tables spread it.
    expect(
      statements.filter(
        (statement) =>
          !/^\w+ (TABLE|MATERIALIZED VIEW) (IF NOT EXISTS )?\w+ ON CLUSTER runwatch/.test(statement) &&
          !/^INSERT INTO \w+\s+SELECT /.test(statement),
      ),
    ).toEqual([]);
    const engines = statements.flatMap((statement) => /ENGINE = (\w+)/.exec(statement)?.[1] ?? []);
    expect(engines.filter((engine) => !/^Replicated|^Distributed$/.test(engine))).toEqual([]);
    expect(statements.join('\n')).not.toMatch(/non_replicated|mutations_sync = 1/);
  }
});

it("sharded: a run's rows, steps, live rows and scores are sharded by the run, so they share a shard", () => {
  const sharded = files.map((file) => renderMigration(file.text, layoutOf('sharded'), tables)).join('\n');
  const keyOf = (table: string) =>
    new RegExp(`Distributed\\(runwatch, currentDatabase\\(\\), ${table}_local, ([^\\n]+)\\);`).exec(sharded)?.[1];
  expect(keyOf('runs')).toBe('cityHash64(project_id, id)');
  expect(keyOf('live_runs')).toBe('cityHash64(project_id, id)');
  for (const table of ['run_steps', 'scores', 'latest_scores'])
    expect(keyOf(table)).toBe('cityHash64(project_id, run_id)');
  // A materialized view reads and writes the local tables of its shard.
  expect(sharded).toMatch(/TO latest_scores_local AS SELECT \* FROM scores_local;/);
  // A new table of something else is sharded by its own id, else by project, else at random.
  expect(shardingKey('CREATE TABLE t (project_id UUID, x UInt8) ORDER BY (project_id, x)')).toBe(
    'cityHash64(project_id)',
  );
  expect(shardingKey('CREATE TABLE t (x UInt8) ORDER BY x')).toBe('rand()');
});

describe('the start-up check', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(() => app.close());
  const on = (topology: ClickHouseLayout['topology']) => ({ ...app.stores.ch, layout: layoutOf(topology) });

  it('accepts the embedded engine as single, and refuses it as any other topology', async () => {
    await expect(checkTopology(on('single'))).resolves.toBeUndefined();
    await expect(checkTopology(on('replicated'))).rejects.toThrow(
      'CLICKHOUSE_TOPOLOGY=replicated but the ClickHouse server has no cluster runwatch (CLICKHOUSE_CLUSTER)',
    );
    await expect(checkTopology(on('sharded'))).rejects.toThrow(/has no cluster runwatch/);
    await expect(checkTopology(on('cloud'))).rejects.toThrow(
      'CLICKHOUSE_TOPOLOGY=cloud but the ClickHouse server holds a schema made for another topology (MergeTree tables)',
    );
  });
});

it('a topology other than single needs a ClickHouse server', () => {
  expect(() => loadConfig({ CLICKHOUSE_TOPOLOGY: 'sharded' })).toThrow(
    'invalid configuration: CLICKHOUSE_TOPOLOGY other than single needs CLICKHOUSE_URL',
  );
  const config = loadConfig({
    CLICKHOUSE_URL: 'http://ch:8123',
    CLICKHOUSE_TOPOLOGY: 'sharded',
    CLICKHOUSE_CLUSTER: 'agents',
    JWT_SECRET: 'x'.repeat(32),
  });
  expect(config.clickhouse?.layout).toEqual({ topology: 'sharded', cluster: 'agents' });
});
