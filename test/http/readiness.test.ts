// /readyz says not ready while the local directories writes go to cannot be written, though both stores answer:
// every write would fail there (a full disk, a read-only mount). The fault here is a real OS error that holds for
// root too: the ingest log's directory replaced by a file (ENOTDIR). test/process/full-disk.test.ts fills a disk.
// Nor is it ready while ClickHouse refuses the ingest log's writes past a backlog's age or size
// (INGEST_READY_MAX_BACKLOG_SECONDS, INGEST_READY_MAX_BACKLOG_ROWS).
import fs from 'node:fs';
import { startTestApp, type TestApp } from '../support/app';
import { expectError } from '../support/assertions';
import { bearer, setUpProject } from '../support/fixtures';

const MAX_BACKLOG_SECONDS = 2;
const MAX_BACKLOG_ROWS = 5;

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({
    INGEST_READY_MAX_BACKLOG_SECONDS: String(MAX_BACKLOG_SECONDS),
    INGEST_READY_MAX_BACKLOG_ROWS: String(MAX_BACKLOG_ROWS),
  });
});
afterAll(() => app.close());

const TABLES = ['live_runs', 'runs', 'run_steps'] as const;

/**
 * ClickHouse refuses the ingest tables' writes but still answers (its ping, its reads): each table is replaced by a
 * Merge table over the real one ("Method write is not supported by storage Merge").
 */
async function refuseIngestWrites(): Promise<() => Promise<void>> {
  for (const table of TABLES) {
    await app.stores.ch.command(`RENAME TABLE ${table} TO ${table}_away`);
    await app.stores.ch.command(
      `CREATE TABLE ${table} AS ${table}_away ENGINE = Merge(currentDatabase(), '^${table}_away$')`,
    );
  }
  return async () => {
    for (const table of TABLES) {
      await app.stores.ch.command(`DROP TABLE ${table}`);
      await app.stores.ch.command(`RENAME TABLE ${table}_away TO ${table}`);
    }
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function readyAgain(): Promise<void> {
  for (let tries = 0; (await app.http.get('/readyz')).status !== 200; tries += 1) {
    if (tries > 100) throw new Error('/readyz did not become ready again');
    await sleep(100);
  }
}

describe('a backlog ClickHouse does not take', () => {
  it('is 503 past its age, then past its size, and ready again once ClickHouse takes it', async () => {
    const { key } = await setUpProject(app);
    const start = (agent: string) => app.http.post('/ingest/agent/runs').set(bearer(key)).send({ agent_name: agent });
    const restore = await refuseIngestWrites();
    try {
      expect((await start('first')).status).toBe(201);
      const young = await app.http.get('/readyz').expect(200);
      expect(young.body.ingest_backlog.rows).toBeGreaterThan(0);

      await sleep(MAX_BACKLOG_SECONDS * 1000 + 300);
      const old = await app.http.get('/readyz');
      expect(expectError(old, 503, 'unavailable').message).toMatch(/oldest write is \d+ s old and not in ClickHouse/);
      expect(Number(old.headers['retry-after'])).toBeGreaterThan(0);
    } finally {
      await restore();
    }
    await readyAgain();

    const restoreAgain = await refuseIngestWrites();
    try {
      const runs = Array.from({ length: MAX_BACKLOG_ROWS + 1 }, () => ({ agent_name: 'many' }));
      expect((await app.http.post('/ingest/agent/runs/batch').set(bearer(key)).send({ runs })).status).toBe(200);
      const large = await app.http.get('/readyz');
      expect(expectError(large, 503, 'unavailable').message).toMatch(/holds \d+ rows not in ClickHouse/);
    } finally {
      await restoreAgain();
    }
    await readyAgain();
  });
});

it('is 503 unavailable with Retry-After while the ingest log directory is unwritable, then ready again', async () => {
  await app.http.get('/readyz').expect(200);
  const directory = app.config.ingestLog!.directory;
  fs.rmSync(directory, { recursive: true });
  fs.writeFileSync(directory, 'not a directory');
  try {
    const res = await app.http.get('/readyz');
    expect(expectError(res, 503, 'unavailable').message).toBe('the data directory cannot be written');
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
  } finally {
    fs.rmSync(directory);
    fs.mkdirSync(directory);
  }
  await app.http.get('/readyz').expect(200);
  // The probe leaves nothing behind.
  expect(fs.readdirSync(directory)).toEqual([]);
});
