// Three service processes on the one Postgres server and one ClickHouse server (the test server of
// test/support/clickhouse-server.ts), as a deployment behind a load balancer runs them (docs/scale-out.md): traffic at
// random across them — each run started on one instance, its steps sent to another, finished on a third — then every
// instance shows every acknowledged write within the documented bound, and `kill -9` of an instance mid-load loses
// nothing it acknowledged, with the per-instance ingest log (replayed at the restart) and with INGEST_LOG=off.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { loadConfig } from '../../src/config';
import { closeStores, openStores } from '../../src/db/stores';
import { startChildService, type ChildService } from '../support/child-service';
import { startClickHouseServerProcess, type ClickHouseServerProcess } from '../support/clickhouse-server';
import { childPostgres } from '../support/postgres-database';
import { convergence, setUpTenant, traffic } from '../support/traffic';

// Its own database, so that the jobs' leases (named by the ClickHouse database) are this deployment's alone.
const DATABASE = 'scale_out';
const RUNS = 150;
// Three services compiled by tsx at once take a while to listen on a busy machine.
const START_MS = 120_000;
// What another instance may take to show a write: INGEST_FLUSH_INTERVAL_MS (1 s) and the insert; a loaded test
// machine is given some more.
const BOUND_MS = 10_000;

// The instances share Postgres only through a server: without DATABASE_URL each would have its own PGlite.
const withPostgres = process.env.DATABASE_URL ? describe : describe.skip;

jest.setTimeout(300_000);

let root: string;
let clickhouse: ClickHouseServerProcess;
// A Postgres database of the deployment's own too: the instances' jobs take up every rule and delivery of theirs.
let postgres: Awaited<ReturnType<typeof childPostgres>>;
beforeAll(async () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'scale-out-'));
  postgres = await childPostgres();
  clickhouse = await startClickHouseServerProcess(path.join(root, 'clickhouse'), DATABASE);
  // The schema first, here, without the instances' start-up deadline: the first instance to start would otherwise
  // migrate the server while the others wait for it.
  const config = loadConfig({
    DATA_DIR: path.join(root, 'migrations'),
    ...postgres.environment,
    CLICKHOUSE_URL: clickhouse.url,
    CLICKHOUSE_DATABASE: DATABASE,
    JWT_SECRET: 'scale-out-migrations-secret-of-32-characters',
  });
  await closeStores(await openStores(config, pino({ level: 'silent' })));
});
afterAll(async () => {
  await clickhouse?.stop();
  await postgres?.drop();
});

/** The three instances of a deployment, each on its own data directory (its own ingest log). */
function deployment(environment: Record<string, string>) {
  const instances: (ChildService | undefined)[] = [];
  const start = (index: number) =>
    startChildService(
      path.join(root, `${environment.INGEST_LOG}-${index}`),
      {
        ...postgres.environment,
        CLICKHOUSE_URL: clickhouse.url,
        CLICKHOUSE_DATABASE: DATABASE,
        AUTH_RATE_LIMIT_PER_MINUTE: '100000',
        ...environment,
      },
      { readyTimeoutMs: START_MS },
    );
  return {
    async up() {
      instances.push(...(await Promise.all([0, 1, 2].map(start))));
    },
    urls: () => instances.flatMap((instance) => (instance ? [instance.url] : [])),
    /** `kill -9` of an instance, then its start again on the same data directory. */
    async crash(index: number) {
      const killed = instances[index]!;
      instances[index] = undefined;
      await killed.kill();
      instances[index] = await start(index);
    },
    down: () => Promise.all(instances.map((instance) => instance?.stop())),
  };
}

withPostgres.each(['on', 'off'])('INGEST_LOG=%s: three instances, one of them killed mid-load', (mode) => {
  const instances = deployment({ INGEST_LOG: mode });
  beforeAll(() => instances.up());
  afterAll(() => instances.down());

  it('every instance shows every acknowledged write, the killed one after its restart', async () => {
    const tenant = await setUpTenant(instances.urls()[0]);
    const load = traffic(tenant, instances.urls);
    const sending = load.send(RUNS, 8);
    await load.acknowledgedAtLeast(RUNS / 3, sending);
    await instances.crash(1);
    await sending;

    const runs = [...load.acknowledged.values()];
    // Calls to the killed instance fail, and a steps or finish call that reaches another instance before the start's
    // flush may get its 404 after a flush interval (docs/ingest.md): what was acknowledged is what is checked.
    expect(runs.length).toBeGreaterThan(RUNS / 2);
    expect(runs.filter((run) => run.finished).length).toBeGreaterThan(0);
    for (const url of instances.urls()) {
      const { missing } = await convergence(url, tenant, runs, BOUND_MS);
      expect(missing).toEqual([]);
    }
  });
});
