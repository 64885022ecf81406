/** Jest runs TypeScript through SWC (fast, no type-check; `npm run typecheck` does that). */
const project = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  transform: { '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2022' } }] },
  setupFiles: ['<rootDir>/test/support/worker-env.ts'],
};

/**
 * The tests that run a second time in server mode: ClickHouse a server (CLICKHOUSE_URL) reached through
 * @clickhouse/client and HTTP, as in a deployment, instead of the embedded engine. Those whose service writes and
 * reads ClickHouse the most, and its failures: ingest, reports (the export streams a result over HTTP, a path of
 * server mode alone), durability (kill -9, the ingest log), OTLP.
 */
const SERVER_MODE_TESTS = [
  'ingest/start',
  'ingest/steps',
  'ingest/finish',
  'ingest/batch',
  'ingest/abandon',
  'ingest/fault',
  'ingest/ingest-log',
  'ingest/crash',
  'db/settled-reads',
  'reports/reports',
  'reports/limits',
  'reports/live-gap',
  'reports/search',
  'reports/export',
  'sessions/sessions',
  'otlp/otlp',
  'otlp/otlp-durability',
  'otlp/instrumentations',
].map((name) => `<rootDir>/test/${name}.test.ts`);

module.exports = {
  testTimeout: 30000,
  // Each worker owns its embedded stores (chdb binds one data directory per process).
  maxWorkers: 2,
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  projects: [
    { ...project, displayName: 'embedded' },
    {
      ...project,
      // docs/testing.md#server-mode: one test ClickHouse server (test/support/clickhouse-server.ts) per worker.
      displayName: 'clickhouse-server',
      testMatch: SERVER_MODE_TESTS,
      setupFiles: [...project.setupFiles, '<rootDir>/test/support/clickhouse-server-env.ts'],
      globalSetup: '<rootDir>/test/support/clickhouse-servers-setup.ts',
      globalTeardown: '<rootDir>/test/support/clickhouse-servers-teardown.ts',
    },
  ],
};
