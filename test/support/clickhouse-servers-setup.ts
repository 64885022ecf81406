// Server mode's global setup (the jest project `clickhouse-server`): one test ClickHouse server per jest worker, each
// its own child process over its own data directory (the engine binds one data directory per process, and a worker
// may also run an embedded engine for the other project's files). Workers find theirs by JEST_WORKER_ID
// (clickhouse-server-env.ts).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { loadConfig } from '../../src/config';
import { closeStores, openStores } from '../../src/db/stores';
import { startClickHouseServerProcess, type ClickHouseServerProcess } from './clickhouse-server';

/** The database the service uses on the test servers: not `default`, as in a deployment. */
export const SERVER_MODE_DATABASE = 'runwatch';

declare global {
  var runwatchClickHouseServers: { servers: ClickHouseServerProcess[]; dataDir: string } | undefined;
}

export default async function setUp(globalConfig: { maxWorkers: number }): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'runwatch-clickhouse-servers-'));
  const servers = await Promise.all(
    Array.from({ length: Math.max(1, globalConfig.maxWorkers) }, (_, index) =>
      startClickHouseServerProcess(path.join(dataDir, `worker-${index + 1}`), SERVER_MODE_DATABASE),
    ),
  );
  globalThis.runwatchClickHouseServers = { servers, dataDir };
  // Each server's schema now, by the service's own migrations, so that a worker's first test file does not spend its
  // beforeAll's time on them.
  await Promise.all(servers.map((server, index) => migrate(server.url, path.join(dataDir, `migrations-${index + 1}`))));
  // Workers are started after this, so they inherit the variable; worker N takes the Nth URL.
  process.env.RUNWATCH_TEST_CLICKHOUSE_URLS = servers.map((server) => server.url).join(' ');
}

async function migrate(url: string, dataDir: string): Promise<void> {
  const config = loadConfig({
    DATA_DIR: dataDir,
    DATABASE_URL: process.env.DATABASE_URL,
    CLICKHOUSE_URL: url,
    CLICKHOUSE_DATABASE: SERVER_MODE_DATABASE,
    JWT_SECRET: 'clickhouse-servers-setup-secret-of-32-characters',
  });
  await closeStores(await openStores(config, pino({ level: 'silent' })));
}
