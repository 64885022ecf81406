// Ingest while ClickHouse fails for real (contract §4): ingest goes on into the ingest log, reads answer 503 with
// Retry-After, and once ClickHouse is back everything acknowledged lands, once. When the log is full or cannot be
// written, calls get 503 and nothing of them is acknowledged or stored.
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import type { Response } from 'supertest';
import { anotherService, startTestApp, type TestApp } from '../support/app';
import { setUpProject } from '../support/fixtures';
import {
  at,
  expectError,
  getRun,
  getSteps,
  keyAuth,
  listRuns,
  llm,
  postBatch,
  postFinish,
  postSteps,
  readRun,
  startRun,
  TEST_ENV,
  tool,
} from './run-helpers';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp(TEST_ENV);
});
afterAll(async () => {
  await restoreTables();
  await app.close();
});
afterEach(() => restoreTables());

const TABLES = ['live_runs', 'runs', 'run_steps'] as const;

/** The ingest tables disappear: every insert, and every read of them, fails inside ClickHouse. */
async function dropIngestTables() {
  await app.stores.ch.command(`RENAME TABLE ${TABLES.map((table) => `${table} TO ${table}_away`).join(', ')}`);
}

/**
 * The ingest tables refuse writes but still answer reads: each is replaced by a Merge table over the real one
 * (ClickHouse: "Method write is not supported by storage Merge"). Reaches the steps, finish and batch paths,
 * which read before they write.
 */
async function refuseIngestWrites() {
  for (const table of TABLES) {
    await app.stores.ch.command(`RENAME TABLE ${table} TO ${table}_away`);
    await app.stores.ch.command(
      `CREATE TABLE ${table} AS ${table}_away ENGINE = Merge(currentDatabase(), '^${table}_away$')`,
    );
  }
}

/** Puts the real tables back, whichever fault is in place (or none); drops only the Merge stand-ins. */
async function restoreTables() {
  const present = await app.stores.ch.query<{ name: string; engine: string }>({
    name: 'test.tables',
    sql: 'SELECT name, engine FROM system.tables WHERE database = currentDatabase() AND name IN {names:Array(String)}',
    params: { names: TABLES.flatMap((table) => [table, `${table}_away`]) },
  });
  const engineOf = new Map(present.map((row) => [row.name, row.engine]));
  for (const table of TABLES) {
    if (!engineOf.has(`${table}_away`)) continue;
    if (engineOf.get(table) === 'Merge') await app.stores.ch.command(`DROP TABLE ${table}`);
    await app.stores.ch.command(`RENAME TABLE ${table}_away TO ${table}`);
  }
}

/** Rows per run id of one project: raw in `runs` (a duplicate counts twice), as reads see them in `live_runs`. */
async function rowsPerRun(table: 'runs' | 'live_runs', projectId: string): Promise<Map<string, number>> {
  const rows = await app.stores.ch.query<{ run_id: string; n: number }>({
    name: 'test.rows_per_run',
    sql: `SELECT toString(id) AS run_id, count() AS n FROM ${table}${table === 'live_runs' ? ' FINAL' : ''}
          WHERE project_id = {project_id:UUID} GROUP BY id`,
    params: { project_id: projectId },
  });
  return new Map(rows.map((row) => [row.run_id, Number(row.n)]));
}

function expectUnavailable(res: Response) {
  expectError(res, 503, 'unavailable');
  expect(res.body.error.details).toEqual([]);
  expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
  // Never internals: no SQL, no stack trace.
  expect(res.body.error.message).not.toMatch(/SELECT|INSERT INTO|\n\s+at /);
}

type Key = { id: string; timestamp: string };
const newKey = (offsetMs: number): Key => ({ id: randomUUID(), timestamp: at(app, offsetMs) });
const start = (key: string, run: Key) =>
  app.http
    .post('/ingest/agent/runs')
    .set(keyAuth(key))
    .send({ agent_name: 'agent', ...run });
const wholeRun = (run: Key, extra: Record<string, unknown> = {}) => ({
  agent_name: 'agent',
  ...run,
  status: 'completed',
  finished_at: at(app),
  steps: [llm(0, 'a', { tokens: 5 }), tool(1, 'search', run.id, 'ok')],
  ...extra,
});

/** Every run of the project as the reads see it, after waiting for the flush (it fails while ClickHouse does). */
async function storedRuns(projectId: string, key: string) {
  await app.writer.flushed(projectId);
  return listRuns(app, key, projectId);
}

it('ClickHouse refusing writes: calls are logged and acknowledged, reads get 503; later each lands once', async () => {
  const { project, key } = await setUpProject(app);
  const before = await startRun(app, key, newKey(-60_000));
  await storedRuns(project.id, key);

  await refuseIngestWrites();
  const starts = Array.from({ length: 10 }, (_, i) => newKey(-50_000 + i));
  const whole = Array.from({ length: 3 }, (_, i) => newKey(-40_000 + i));
  const duringStarts = await Promise.all(starts.map((run) => start(key, run)));
  for (const res of duringStarts) expect(res.status).toBe(201);
  // Runs acknowledged a moment ago are found in the head: steps and finish go on too.
  expect((await postSteps(app, key, starts[0], [llm(0, 'plan', { tokens: 4 }), tool(1, 'search')])).status).toBe(200);
  expect((await postSteps(app, key, starts[0], [llm(2, 'answer', { tokens: 6 })])).status).toBe(200);
  expect(
    (await postFinish(app, key, starts[1], { status: 'failed', steps: [llm(0, 'x', { tokens: 2 })] })).status,
  ).toBe(200);
  expect(
    (
      await postBatch(
        app,
        key,
        whole.map((run) => wholeRun(run)),
      )
    ).status,
  ).toBe(200);
  // A run flushed before the outage is read from ClickHouse, which still answers reads.
  expect((await postFinish(app, key, before, { status: 'completed' })).status).toBe(200);

  // Reads wait for the flush of what was acknowledged, which cannot happen now.
  expectUnavailable(await app.http.get(`/projects/${project.id}/agent/runs`).set(keyAuth(key)));
  expectUnavailable(await getRun(app, key, project.id, starts[0].id, starts[0].timestamp));
  const ready = await app.http.get('/readyz').expect(200);
  expect(ready.body.ingest_backlog.rows).toBeGreaterThan(0);
  expect(ready.body.ingest_backlog.bytes).toBeGreaterThan(0);

  await restoreTables();
  const list = await storedRuns(project.id, key);
  const everyId = [before, ...starts, ...whole].map((run) => run.id);
  expect([...list.ids].sort()).toEqual([...everyId].sort());
  expect(list.total).toBe(everyId.length);
  for (const [id, count] of await rowsPerRun('live_runs', project.id)) expect({ id, count }).toEqual({ id, count: 1 });
  const finished = await rowsPerRun('runs', project.id);
  expect([...finished.keys()].sort()).toEqual([before, starts[1], ...whole].map((run) => run.id).sort());
  for (const count of finished.values()) expect(count).toBe(1);
  expect(await readRun(app, key, project.id, starts[0])).toMatchObject({
    status: 'running',
    total_steps: 3,
    total_tokens: 10,
  });
  expect((await getSteps(app, key, project.id, starts[0].id, starts[0].timestamp)).body).toHaveLength(3);
  expect(await readRun(app, key, project.id, starts[1])).toMatchObject({
    status: 'failed',
    total_steps: 1,
    total_tokens: 2,
  });
  expect(await readRun(app, key, project.id, before)).toMatchObject({ status: 'completed' });
  for (const run of whole)
    expect(await readRun(app, key, project.id, run)).toMatchObject({
      status: 'completed',
      total_steps: 2,
      total_tokens: 5,
    });
});

it('ingest tables gone: starts are acknowledged; a call that must read its run gets 503, stores nothing', async () => {
  const { project, key } = await setUpProject(app);
  const flushed = await startRun(app, key, newKey(-30_000));
  await storedRuns(project.id, key);
  await dropIngestTables();
  const fresh = newKey(-20_000);
  expect((await start(key, fresh)).status).toBe(201);
  // A run whose every step is in the head needs nothing from ClickHouse: its steps calls and finish go on.
  const inHead = newKey(-19_000);
  expect((await start(key, inHead)).status).toBe(201);
  expect((await postSteps(app, key, inHead, [llm(0, 'a', { tokens: 1 })])).status).toBe(200);
  expect((await postSteps(app, key, inHead, [llm(1, 'b', { tokens: 2 })])).status).toBe(200);
  expect((await postFinish(app, key, inHead, { status: 'completed', steps: [tool(2, 'search')] })).body).toMatchObject({
    total_steps: 3,
    total_tokens: 3,
  });
  const refused = [
    await postSteps(app, key, flushed, [tool(0, 'search')]),
    await postFinish(app, key, flushed, { status: 'completed' }),
    await postBatch(app, key, [wholeRun(newKey(-10_000))]),
  ];
  for (const res of refused) {
    expectUnavailable(res);
    // The cause stays in the log: no table names or ClickHouse text reach the client.
    expect(res.body.error.message).not.toMatch(/Code:|DB::Exception|_away/);
  }
  await restoreTables();
  const list = await storedRuns(project.id, key);
  expect([...list.ids].sort()).toEqual([flushed.id, fresh.id, inHead.id].sort());
  expect(await readRun(app, key, project.id, inHead)).toMatchObject({
    status: 'completed',
    total_steps: 3,
    total_tokens: 3,
  });
  expect(await readRun(app, key, project.id, flushed)).toMatchObject({ status: 'running', total_steps: 0 });
});

it('an outage that begins while requests are in flight: every 2xx lands exactly once after recovery', async () => {
  const { project, key } = await setUpProject(app);
  const runs = Array.from({ length: 60 }, (_, i) => newKey(-100_000 + i));
  const wholeNames = Array.from({ length: 20 }, (_, i) => `whole-${i}`);
  const send = [
    ...runs.map((run) => () => start(key, run).then((res) => ({ kind: 'start' as const, id: run.id, res }))),
    ...wholeNames.map(
      (name) => () =>
        postBatch(app, key, [{ agent_name: name, status: 'completed', steps: [llm(0, name)] }]).then((res) => ({
          kind: 'whole' as const,
          id: name,
          res,
        })),
    ),
  ].sort(() => Math.random() - 0.5);
  const inFlight: ReturnType<(typeof send)[number]>[] = [];
  let outage: Promise<void> | undefined;
  for (const [i, request] of send.entries()) {
    if (i === Math.floor(send.length / 3)) outage = refuseIngestWrites();
    inFlight.push(request());
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  await outage;
  const outcomes = await Promise.all(inFlight);
  for (const { res } of outcomes) expect([200, 201]).toContain(res.status);
  await restoreTables();

  await storedRuns(project.id, key);
  const live = await rowsPerRun('live_runs', project.id);
  for (const run of runs) expect({ id: run.id, rows: live.get(run.id) }).toEqual({ id: run.id, rows: 1 });
  const finishedByAgent = await app.stores.ch.query<{ agent_name: string; n: number }>({
    name: 'test.rows_per_agent',
    sql: `SELECT agent_name, count() AS n FROM runs WHERE project_id = {project_id:UUID}
          GROUP BY agent_name ORDER BY agent_name`,
    params: { project_id: project.id },
  });
  expect(finishedByAgent.map((row) => [row.agent_name, Number(row.n)])).toEqual(
    [...wholeNames].sort().map((name) => [name, 1]),
  );
  expect((await listRuns(app, key, project.id)).total).toBe(runs.length + wholeNames.length);
});

describe('when the log cannot take a write', () => {
  it('log full: calls get 503 with Retry-After, not stored; the acknowledged land once after recovery', async () => {
    // The same service and stores, with a log of 1 MiB.
    const small = anotherService(app, {
      ingestLog: { directory: `${app.config.ingestLog!.directory}-small`, maxBytes: 1024 * 1024 },
    });
    try {
      const { project, key } = await setUpProject(small);
      const heavy = (run: Key) =>
        small.http
          .post('/ingest/agent/runs')
          .set(keyAuth(key))
          .send({ agent_name: 'heavy', input: 'x'.repeat(100_000), ...run });
      await refuseIngestWrites();
      const sent = Array.from({ length: 14 }, (_, i) => ({ id: randomUUID(), timestamp: at(small, -10_000 + i) }));
      const answers: Response[] = [];
      for (const run of sent) answers.push(await heavy(run));
      const acknowledged = sent.filter((_, i) => answers[i].status === 201);
      const refused = sent.filter((_, i) => answers[i].status !== 201);
      // About ten 100 kB records fit in 1 MiB.
      expect(acknowledged.length).toBeGreaterThanOrEqual(8);
      expect(refused.length).toBeGreaterThanOrEqual(3);
      for (const res of answers.filter((answer) => answer.status !== 201)) expectUnavailable(res);
      await restoreTables();
      await small.writer.flushed(project.id);
      const list = await listRuns(small, key, project.id);
      expect([...list.ids].sort()).toEqual(acknowledged.map((run) => run.id).sort());
      expect(list.total).toBe(acknowledged.length);
      // Room again: the refused ones are taken now.
      for (const run of refused) expect((await heavy(run)).status).toBe(201);
    } finally {
      await restoreTables();
      await small.ingest.drain();
    }
  });

  it('log directory unwritable: calls get 503, nothing is acknowledged; it recovers with the directory', async () => {
    const { project, key } = await setUpProject(app);
    await startRun(app, key);
    await storedRuns(project.id, key);
    // Nothing is in the log now, and no segment is open: the next write must create one, in a path that is a file.
    const directory = app.config.ingestLog!.directory;
    fs.rmSync(directory, { recursive: true });
    fs.writeFileSync(directory, 'not a directory');
    try {
      const refused = newKey(-1000);
      expectUnavailable(await start(key, refused));
      expectUnavailable(await postBatch(app, key, [{ agent_name: 'agent', ...newKey(-2000) }]));
      fs.rmSync(directory);
      fs.mkdirSync(directory);
      expect((await start(key, newKey(-500))).status).toBe(201);
      expect((await storedRuns(project.id, key)).ids).not.toContain(refused.id);
      expect((await storedRuns(project.id, key)).total).toBe(2);
    } finally {
      if (!fs.statSync(directory).isDirectory()) fs.rmSync(directory);
      fs.mkdirSync(directory, { recursive: true });
    }
  });
});

it('the tables are back for the next test file: a plain start works', async () => {
  const { project, key } = await setUpProject(app);
  const run = await startRun(app, key);
  expect((await readRun(app, key, project.id, run)).status).toBe('running');
});
