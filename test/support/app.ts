// Starts the real service for a test file: real Postgres (DATABASE_URL, else PGlite) and real ClickHouse (chdb).
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

export async function startTestApp(environment: Record<string, string> = {}) {
  const config = loadConfig({
    DATA_DIR: workerDataDir,
    DATABASE_URL: process.env.DATABASE_URL,
    JWT_SECRET: 'test-secret-that-is-at-least-32-characters-long',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    // The test clock stands still, so the per-address register/login window never ends: rate-limit tests set their own.
    AUTH_RATE_LIMIT_PER_MINUTE: '1000000',
    // Each app its own ingest log: test files that share a worker's ClickHouse must not replay each other's.
    INGEST_LOG_DIR: path.join(workerDataDir, `ingest-log-${randomUUID()}`),
    ...environment,
  });
  const log = pino({ level: config.logLevel });
  const stores = await openStores(config, log);
  const clock = new ManualClock(new Date());
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
