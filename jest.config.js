/** Jest runs TypeScript through SWC (fast, no type-check; `npm run typecheck` does that). */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  transform: { '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2022' } }] },
  testTimeout: 30000,
  // Each worker owns its embedded stores (chdb binds one data directory per process).
  maxWorkers: 2,
  setupFiles: ['<rootDir>/test/support/worker-env.ts'],
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
};
