// Starts the real service for a test file: real Postgres (DATABASE_URL, else PGlite) and real ClickHouse (chdb; in
// server mode, CLICKHOUSE_URL: a test ClickHouse server over chdb, reached through HTTP as a deployment reaches one).
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import pino, { type Logger } from 'pino';
import supertest from 'supertest';
import { createApp } from '../../src/app';
import { ManualClock } from '../../src/clock';
import { loadConfig, type Config } from '../../src/config';
import { closeStores, openStores } from '../../src/db/stores';

// chdb binds one data directory per process, so each jest worker keeps its own, inside the run's directory.
export const workerDataDir = path.join(
  process.env.RUNWATCH_TEST_DIR ?? path.join(os.tmpdir(), 'runwatch-test'),
  `worker-${process.env.JEST_WORKER_ID ?? '0'}`,
);

/** The settings of a test whose notifications go to a receiver on this machine: WEBHOOK_ALLOW_HOSTS lists it. */
export const LOCAL_RECEIVER = { WEBHOOK_ALLOW_HOSTS: '127.0.0.1' };

/**
 * What a test service waits for on a busy machine, in process (startTestApp) or as a child (child-service.ts).
 */
export const BUSY_MACHINE_ENV = {
  // Two workers, their services and a browser share two cores: a page's reads wait in the read lane rather than be
  // refused after a second (test/http/limits.test.ts sets the lanes it tests).
  LANE_QUEUE_TIMEOUT_MS: '30000',
  // Likewise a read waits for the flush holding its writes: a flush whose lightweight DELETE (a late OTLP child
  // replacing its run's row) waits behind the worker's merges took over the default 10 s in CI.
  READ_FLUSH_WAIT_MS: '60000',
  // And a read has the time of both waits and of its statements (test/http/limits.test.ts tests READ_TIMEOUT_MS).
  READ_TIMEOUT_MS: '180000',
  // Reads run at the engine's lowest priority in a deployment; here, the other worker's work would hold them: they run
  // at the tests' own (test/db/read-scope.test.ts checks the nice value).
  READ_THREAD_NICE: '0',
};

/**
 * The service on the test's stores. `clock`: another app's, for several instances of one deployment (each
 * startTestApp opens its own Postgres connections and ClickHouse session over the same database and engine);
 * `log`: where its log goes (silent, else).
 */
export async function startTestApp(
  environment: Record<string, string> = {},
  options: { clock?: ManualClock; log?: Logger } = {},
) {
  const config = loadConfig({
    DATA_DIR: workerDataDir,
    DATABASE_URL: process.env.DATABASE_URL,
    CLICKHOUSE_URL: process.env.CLICKHOUSE_URL,
    CLICKHOUSE_DATABASE: process.env.CLICKHOUSE_DATABASE,
    JWT_SECRET: 'test-secret-that-is-at-least-32-characters-long',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    // The test clock stands still, so the per-address register/login window never ends: rate-limit tests set their own.
    AUTH_RATE_LIMIT_PER_MINUTE: '1000000',
    // Every test file logs in from this host's address into one Postgres, where failed logins are counted for a day.
    LOGIN_FAILURES_PER_ADDRESS: '1000000',
    ...BUSY_MACHINE_ENV,
    // The report paths by the windows' length alone, as before the runs counted: a test's few runs would send every
    // report to raw rows and leave the rollups untested (test/reports/run-rate.test.ts tests the choice).
    REPORT_RAW_MAX_RUNS: '0',
    // Each app its own ingest log: test files that share a worker's ClickHouse must not replay each other's.
    INGEST_LOG_DIR: path.join(workerDataDir, `ingest-log-${randomUUID()}`),
    ...environment,
  });
  const clock = options.clock ?? new ManualClock(new Date());
  const log = options.log ?? pino({ level: config.logLevel });
  const stores = await openStores(config, log);
  const service = createApp({ config, stores, clock, log, jwtSecret: config.jwtSecret! });
  return {
    ...service,
    config,
    stores,
    clock,
    http: supertest(service.app),
    close: async () => {
      await service.otlpDecoders.close();
      await service.ingest.drain();
      await closeStores(stores);
    },
  };
}

export type TestApp = Awaited<ReturnType<typeof startTestApp>>;

/**
 * The service again, over a test app's stores, with some of its configuration changed: another instance (or the same
 * one restarted), in effect. Give it its own ingest log directory when it has one: two services never share a log.
 */
export function anotherService(app: TestApp, config: Partial<Config>, log: Logger = pino({ level: 'silent' })) {
  const service = createApp({
    config: { ...app.config, ...config },
    stores: app.stores,
    clock: app.clock,
    log,
    jwtSecret: app.config.jwtSecret!,
  });
  return { ...app, ...service, http: supertest(service.app) };
}
