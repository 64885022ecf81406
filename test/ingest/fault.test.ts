// Ingest while ClickHouse fails for real (contract §1, §4): 503 with Retry-After, nothing acknowledged that is not
// stored, nothing stored twice once clients retry.
import { randomUUID } from 'node:crypto';
import type { Response } from 'supertest';
import { startTestApp, type TestApp } from '../support/app';
import { setUpProject } from '../support/fixtures';
import {
  at, expectError, getRun, getSteps, keyAuth, listRuns, llm, postBatch, postFinish, postSteps, readRun, startRun, TEST_ENV, tool,
} from './run-helpers';

let app: TestApp;
beforeAll(async () => { app = await startTestApp(TEST_ENV); });
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
    await app.stores.ch.command(`CREATE TABLE ${table} AS ${table}_away ENGINE = Merge(currentDatabase(), '^${table}_away$')`);
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
const start = (key: string, run: Key) => app.http.post('/ingest/agent/runs').set(keyAuth(key)).send({ agent_name: 'agent', ...run });
const whole = (run: Key, extra: Record<string, unknown> = {}) => ({
  agent_name: 'agent', ...run, status: 'completed', finished_at: at(app), steps: [llm(0, 'a', { tokens: 5 }), tool(1, 'search', run.id, 'ok')], ...extra,
});

it('while the ingest tables are gone: concurrent starts and batches all get 503; after recovery, retries store each run once', async () => {
  const { project, key } = await setUpProject(app);
  // Acknowledged before the outage.
  const ackedStarts = [newKey(-50_000), newKey(-49_000), newKey(-48_000)];
  for (const run of ackedStarts) expect((await start(key, run)).status).toBe(201);
  const ackedWhole = [newKey(-47_000), newKey(-46_000)];
  expect((await postBatch(app, key, ackedWhole.map((run) => whole(run)))).status).toBe(200);

  const newStarts = Array.from({ length: 10 }, (_, i) => newKey(-40_000 + i));
  const batchedStarts = Array.from({ length: 5 }, (_, i) => newKey(-30_000 + i));
  await dropIngestTables();
  const during = await Promise.all([
    ...newStarts.map((run) => start(key, run)),
    ...ackedStarts.map((run) => start(key, run)),
    postBatch(app, key, batchedStarts.map((run) => ({ agent_name: 'agent', ...run }))),
    // Whole runs with server-chosen ids: the batch writes them without reading first.
    postBatch(app, key, [{ agent_name: 'server-ids', status: 'completed' }, { agent_name: 'server-ids', status: 'failed', steps: [llm(0, 'x')] }]),
    postBatch(app, key, [{ agent_name: 'server-ids' }, { agent_name: 'server-ids', status: 'cancelled' }]),
  ]);
  for (const res of during) expectUnavailable(res);
  await restoreTables();

  // Nothing refused is there: not the new starts, not the batched runs, not the runs with server-chosen ids.
  const liveAfterOutage = await rowsPerRun('live_runs', project.id);
  const finishedAfterOutage = await rowsPerRun('runs', project.id);
  expect([...liveAfterOutage.keys()].sort()).toEqual(ackedStarts.map((run) => run.id).sort());
  expect([...finishedAfterOutage.keys()].sort()).toEqual(ackedWhole.map((run) => run.id).sort());
  for (const run of newStarts) expectError(await getRun(app, key, project.id, run.id), 404, 'not_found');

  // Clients retry what was refused, and (needlessly) what was acknowledged; and new work arrives.
  const fresh = newKey(-10_000);
  const after = await Promise.all([
    ...[...newStarts, ...ackedStarts, fresh].map((run) => start(key, run)),
    postBatch(app, key, batchedStarts.map((run) => ({ agent_name: 'agent', ...run }))),
    postBatch(app, key, ackedWhole.map((run) => whole(run))),
  ]);
  for (const res of after) expect([200, 201]).toContain(res.status);

  const live = await rowsPerRun('live_runs', project.id);
  const finished = await rowsPerRun('runs', project.id);
  const startedIds = [...ackedStarts, ...newStarts, ...batchedStarts, fresh].map((run) => run.id);
  expect([...live.keys()].sort()).toEqual([...startedIds].sort());
  for (const id of startedIds) expect(live.get(id)).toBe(1);
  expect([...finished.keys()].sort()).toEqual(ackedWhole.map((run) => run.id).sort());
  for (const run of ackedWhole) {
    expect(finished.get(run.id)).toBe(1);
    expect(await readRun(app, key, project.id, run)).toMatchObject({ status: 'completed', total_steps: 2, total_tokens: 5 });
  }
  const list = await listRuns(app, key, project.id);
  expect(list.total).toBe(startedIds.length + ackedWhole.length);
  expect([...list.ids].sort()).toEqual([...startedIds, ...ackedWhole.map((run) => run.id)].sort());
});

it('while the ingest tables refuse writes: starts, steps, finish and batches all get 503 and change nothing; retries then apply once', async () => {
  const { project, key } = await setUpProject(app);
  const withSteps = await startRun(app, key, newKey(-60_000));
  expect((await postSteps(app, key, withSteps, [llm(0, 'first', { tokens: 1 })])).status).toBe(200);
  const toFinish = await startRun(app, key, newKey(-59_000));
  const ackedWhole = newKey(-58_000);
  expect((await postBatch(app, key, [whole(ackedWhole)])).status).toBe(200);
  const ackedStart = newKey(-57_000);
  expect((await start(key, ackedStart)).status).toBe(201);

  const newStarts = Array.from({ length: 5 }, (_, i) => newKey(-40_000 + i));
  const newWhole = Array.from({ length: 3 }, (_, i) => newKey(-30_000 + i));
  const requests = () => [
    ...newStarts.map((run) => start(key, run)),
    start(key, ackedStart),
    postSteps(app, key, withSteps, [llm(1, 'second', { tokens: 2 })]),
    postFinish(app, key, toFinish, { status: 'failed', finished_at: at(app) }),
    postBatch(app, key, [...newWhole.map((run) => whole(run)), whole(ackedWhole)]),
    postBatch(app, key, [{ agent_name: 'server-ids' }, { agent_name: 'server-ids', status: 'completed' }]),
  ];

  await refuseIngestWrites();
  const during = await Promise.all(requests());
  for (const res of during) expectUnavailable(res);
  await restoreTables();

  // Nothing of the refused requests is visible.
  expect(await readRun(app, key, project.id, withSteps)).toMatchObject({ status: 'running', total_steps: 1, total_tokens: 1 });
  expect((await getSteps(app, key, project.id, withSteps.id, withSteps.timestamp)).body).toHaveLength(1);
  expect(await readRun(app, key, project.id, toFinish)).toMatchObject({ status: 'running' });
  for (const run of [...newStarts, ...newWhole]) expectError(await getRun(app, key, project.id, run.id), 404, 'not_found');
  expect([...(await rowsPerRun('runs', project.id)).keys()]).toEqual([ackedWhole.id]);

  // The same requests again, now that ClickHouse takes writes: each applies once.
  const after = await Promise.all(requests());
  for (const res of after) expect([200, 201]).toContain(res.status);
  const again = await Promise.all(requests());
  for (const res of again) expect([200, 201]).toContain(res.status);

  expect(await readRun(app, key, project.id, withSteps)).toMatchObject({ status: 'running', total_steps: 2, total_tokens: 3 });
  expect(await readRun(app, key, project.id, toFinish)).toMatchObject({ status: 'failed', termination_reason: 'error' });
  const finished = await rowsPerRun('runs', project.id);
  for (const run of [toFinish, ackedWhole, ...newWhole]) expect(finished.get(run.id)).toBe(1);
  const live = await rowsPerRun('live_runs', project.id);
  for (const run of [...newStarts, ackedStart, withSteps]) expect(live.get(run.id)).toBe(1);
  // Every row of `runs` in the project is one run: the known whole runs, the finished one, and one per
  // successful server-id batch (their ids are new on every send, as the contract says).
  expect([...finished.values()].every((count) => count === 1)).toBe(true);
  expect(finished.size).toBe(2 + newWhole.length + 2);
});

it('an outage that begins while requests are in flight: every 2xx is stored exactly once, every 503 stored nothing', async () => {
  const { project, key } = await setUpProject(app);
  const runs = Array.from({ length: 60 }, (_, i) => newKey(-100_000 + i));
  // Whole runs with server-chosen ids (the batch writes them without reading first), told apart by agent_name.
  const wholeNames = Array.from({ length: 20 }, (_, i) => `whole-${i}`);

  const send = [
    ...runs.map((run) => () => start(key, run).then((res) => ({ kind: 'start' as const, id: run.id, res }))),
    ...wholeNames.map((name) => () =>
      postBatch(app, key, [{ agent_name: name, status: 'completed', steps: [llm(0, name)] }]).then((res) => ({ kind: 'whole' as const, id: name, res }))),
  ].sort(() => Math.random() - 0.5);
  // Requests go out one every few milliseconds; a third of the way in, the tables are pulled away under them.
  const inFlight: ReturnType<(typeof send)[number]>[] = [];
  let outage: Promise<void> | undefined;
  for (const [i, request] of send.entries()) {
    if (i === Math.floor(send.length / 3)) outage = refuseIngestWrites();
    inFlight.push(request());
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  await outage;
  const outcomes = await Promise.all(inFlight);
  await restoreTables();

  const live = await rowsPerRun('live_runs', project.id);
  const finishedByAgent = new Map((await app.stores.ch.query<{ agent_name: string; n: number; id: string }>({
    name: 'test.rows_per_agent',
    sql: `SELECT agent_name, count() AS n, toString(any(id)) AS run_id FROM runs WHERE project_id = {project_id:UUID} GROUP BY agent_name`,
    params: { project_id: project.id },
  })).map((row) => [row.agent_name, row]));
  for (const { kind, id, res } of outcomes) {
    expect({ id, status: [200, 201, 503].includes(res.status) }).toEqual({ id, status: true });
    const stored = kind === 'start' ? (live.get(id) ?? 0) : Number(finishedByAgent.get(id)?.n ?? 0);
    if (res.status === 503) {
      expectUnavailable(res);
      expect({ id, stored }).toEqual({ id, stored: 0 });
    } else {
      expect({ id, stored }).toEqual({ id, stored: 1 });
      if (kind === 'whole') expect((await readRun(app, key, project.id, res.body.results[0])).agent_name).toBe(id);
    }
  }

  // Clients retry the starts (safe: they carry id and timestamp); afterwards each run is stored once.
  const retried = await Promise.all(runs.map((run) => start(key, run)));
  for (const res of retried) expect(res.status).toBe(201);
  const liveAfter = await rowsPerRun('live_runs', project.id);
  for (const run of runs) expect(liveAfter.get(run.id)).toBe(1);
  expect(liveAfter.size).toBe(runs.length);
  const acknowledgedWhole = outcomes.filter(({ kind, res }) => kind === 'whole' && res.status === 200).length;
  expect((await listRuns(app, key, project.id)).total).toBe(runs.length + acknowledgedWhole);
});

it('while the ingest tables are gone, steps, finish and batches of whole runs with client ids also get 503', async () => {
  const { key } = await setUpProject(app);
  const run = await startRun(app, key);
  await dropIngestTables();
  const responses = [
    await postSteps(app, key, run, [tool(0, 'search')]),
    await postFinish(app, key, run, { status: 'completed' }),
    await postBatch(app, key, [{ agent_name: 'a', id: randomUUID(), timestamp: at(app, -1000), status: 'completed' }]),
  ];
  for (const res of responses) {
    expectError(res, 503, 'unavailable');
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    // The cause stays in the log: no table names or ClickHouse text reach the client.
    expect(res.body.error.message).not.toMatch(/Code:|DB::Exception|_away/);
  }
});

it('the tables are back for the next test file: a plain start works', async () => {
  const { project, key } = await setUpProject(app);
  const run = await startRun(app, key);
  expect((await readRun(app, key, project.id, run)).status).toBe('running');
});
