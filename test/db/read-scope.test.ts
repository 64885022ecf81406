// A read's scope (src/db/read-scope.ts) on the real engine: a read's statement takes at most what is left of the
// read's time and is answered 503 with Retry-After past it, and the engine's threads run it at the read's nice value;
// a flush of the ingest log that a read waits for stays ingest's.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ClickHouseStore } from '../../src/db/clickhouse';
import { asRead, readNice, readTimeLeftMs } from '../../src/db/read-scope';
import { startRun } from '../ingest/run-helpers';
import { anotherService, startTestApp, type TestApp } from '../support/app';
import { setUpProject } from '../support/fixtures';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.close());

/** A statement that keeps the engine busy for seconds (one thread). */
const busy = (rows: number) => ({
  name: 'busy',
  sql: 'SELECT sum(cityHash64(toString(number))) AS total FROM numbers({rows:UInt64}) SETTINGS max_threads = 1',
  params: { rows },
});

/** The nice values of this process's threads (the embedded engine's are among them). */
const threadNices = () =>
  fs.readdirSync('/proc/self/task').map((task) => {
    const stat = fs.readFileSync(`/proc/self/task/${task}/stat`, 'utf8');
    return Number(stat.replace(/^.*\) /s, '').split(' ')[16]);
  });

it("stops a read's statement when the read's time is up: 503 with Retry-After", async () => {
  const startedAt = Date.now();
  const answer = await asRead(Date.now() + 300, 0, () => app.stores.ch.query(busy(2_000_000_000))).catch(
    (error: unknown) => error,
  );
  expect(Date.now() - startedAt).toBeLessThan(2000);
  expect(answer).toMatchObject({ status: 503, code: 'unavailable', headers: { 'Retry-After': '1' } });
});

it('answers a read whose time is up before its statement may start, without running it', async () => {
  const answer = await asRead(Date.now() - 1, 0, () => app.stores.ch.query(busy(1))).catch((error: unknown) => error);
  expect(answer).toMatchObject({ status: 503, code: 'unavailable' });
});

// The engine's threads are this process's only when it is embedded; setting a nice value needs CAP_SYS_NICE, which
// the reference machine and CI have (they run as root).
(process.env.CLICKHOUSE_URL ? it.skip : it)("runs a read's statements at the read's nice value", async () => {
  expect(threadNices()).not.toContain(13);
  const read = asRead(Date.now() + 30_000, 13, () => app.stores.ch.query(busy(20_000_000)));
  const seen = new Set<number>();
  for (const until = Date.now() + 20_000; Date.now() < until && !seen.has(13);) {
    for (const nice of threadNices()) seen.add(nice);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  await read;
  expect(seen).toContain(13);
});

it("runs a flush that a read waits for as ingest's: its inserts have no read's time, no read's priority", async () => {
  // The real store, with the scope each insert of the flush runs in written down.
  const scopes: { timeLeftMs: number; nice: number }[] = [];
  const { ch } = app.stores;
  const recording: ClickHouseStore = {
    ...ch,
    insertLines(...args) {
      scopes.push({ timeLeftMs: readTimeLeftMs(), nice: readNice() });
      return ch.insertLines(...args);
    },
  };
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'read-flush-'));
  // Its own ingest log and a flush timer that never fires in the test: only the read's barrier flushes.
  const service = anotherService(
    { ...app, stores: { ...app.stores, ch: recording } },
    { ingestLog: { ...app.config.ingestLog!, directory }, ingestFlushIntervalMs: 600_000 },
  );
  try {
    const { project, key } = await setUpProject(service);
    await startRun(service, key, { agent_name: 'flushed-for-a-read' });
    await asRead(Date.now() + 30_000, 13, () => service.writer.flushed(project.id));
    expect(scopes.length).toBeGreaterThan(0);
    expect(scopes).toEqual(scopes.map(() => ({ timeLeftMs: Infinity, nice: 0 })));
  } finally {
    await service.ingest.drain();
    fs.rmSync(directory, { recursive: true, force: true });
  }
});
