// The abandon job (contract §6): a run still running RUN_ABANDON_AFTER after its start becomes `abandoned`.
import { startTestApp, type TestApp } from '../support/app';
import { setUpProject } from '../support/fixtures';
import {
  at,
  expectError,
  finishedRowCount,
  getRun,
  insertFinishedRowOnly,
  liveRowCount,
  llm,
  postFinish,
  postSteps,
  readRun,
  startRun,
  TEST_ENV,
  tool,
  type Started,
} from './run-helpers';

let app: TestApp;
let origin: Date;
beforeAll(async () => {
  app = await startTestApp(TEST_ENV);
  origin = app.clock.now();
});
afterAll(() => app.close());
// Every test starts from the same "now", whatever the one before did to the clock.
beforeEach(() => app.clock.set(origin));

const after = () => app.config.runAbandonAfterSeconds;
const pass = () => app.ingest.abandonStaleRuns(after());
const idsOf = (runs: { id: string }[]) => runs.map((run) => run.id);

it('marks a run still running RUN_ABANDON_AFTER past its start abandoned (status and termination_reason)', async () => {
  const { project, key } = await setUpProject(app);
  const run = await startRun(app, key, { agent_name: 'sleepy', input: 'in', metadata: [3] });
  await postSteps(app, key, run, [
    llm(0, 'a', { tokens: 10, cost_usd: 0.5 }),
    tool(1, 'search', 'q', 'r', { tokens: 2 }),
  ]);

  app.clock.advance(after() + 1);
  const marked = await pass();
  const mine = marked.filter((abandoned) => abandoned.project_id === project.id);
  expect(idsOf(mine)).toEqual([run.id]);

  const expected = {
    id: run.id,
    project_id: project.id,
    agent_name: 'sleepy',
    status: 'abandoned',
    timestamp: run.timestamp,
    finished_at: app.clock.now().toISOString(),
    duration_ms: (after() + 1) * 1000,
    input: 'in',
    output: '',
    loop_detected: false,
    loop_step_index: null,
    termination_reason: 'abandoned',
    termination_detail: null,
    total_steps: 2,
    total_tokens: 12,
    total_cost_usd: 0.5,
    metadata: [3],
    session_id: null,
    user_id: null,
    tags: [],
  };
  expect(mine[0]).toEqual(expected);
  expect(await readRun(app, key, project.id, run)).toEqual(expected);
  expect((await getRun(app, key, project.id, run.id)).body).toEqual(expected);
});

it('leaves a run alone until RUN_ABANDON_AFTER has passed', async () => {
  const { project, key } = await setUpProject(app);
  const run = await startRun(app, key);
  app.clock.advance(after() - 1);
  expect(idsOf(await pass())).not.toContain(run.id);
  expect(await readRun(app, key, project.id, run)).toMatchObject({ status: 'running', termination_reason: null });
});

it('does not touch finished runs, whatever their age', async () => {
  const { project, key } = await setUpProject(app);
  const finished: Started[] = [];
  for (const status of ['completed', 'failed', 'cancelled', 'timed_out']) {
    const run = await startRun(app, key);
    expect((await postFinish(app, key, run, { status })).status).toBe(200);
    finished.push(run);
  }
  const running = await startRun(app, key);
  app.clock.advance(after() * 2);
  const marked = idsOf(await pass());
  expect(marked).toContain(running.id);
  for (const run of finished) {
    expect(marked).not.toContain(run.id);
    expect((await readRun(app, key, project.id, run)).status).not.toBe('abandoned');
    expect(await finishedRowCount(app, project.id, run.id)).toBe(1);
  }
});

it('marks a run once: a second pass finds nothing more to do', async () => {
  const { project, key } = await setUpProject(app);
  const run = await startRun(app, key);
  app.clock.advance(after() + 60);
  expect(idsOf(await pass())).toContain(run.id);
  app.clock.advance(3600);
  expect(idsOf(await pass())).not.toContain(run.id);
  expect(await finishedRowCount(app, project.id, run.id)).toBe(1);
  expect((await readRun(app, key, project.id, run)).finished_at).toBe(
    new Date(origin.getTime() + (after() + 60) * 1000).toISOString(),
  );
});

it('only marks the runs that are stale: a younger run of the same project keeps running', async () => {
  const { project, key } = await setUpProject(app);
  const old = await startRun(app, key);
  app.clock.advance(after() / 2);
  const young = await startRun(app, key);
  app.clock.advance(after() / 2 + 1);
  const marked = idsOf(await pass());
  expect(marked).toContain(old.id);
  expect(marked).not.toContain(young.id);
  expect((await readRun(app, key, project.id, old)).status).toBe('abandoned');
  expect((await readRun(app, key, project.id, young)).status).toBe('running');
});

it('keeps a loop found while the run was running', async () => {
  const { project, key } = await setUpProject(app);
  const run = await startRun(app, key);
  await postSteps(
    app,
    key,
    run,
    [0, 1, 2].map((index) => llm(index, 'again')),
  );
  app.clock.advance(after() + 1);
  await pass();
  expect(await readRun(app, key, project.id, run)).toMatchObject({
    status: 'abandoned',
    loop_detected: true,
    loop_step_index: 0,
    total_steps: 3,
  });
});

it('an abandoned run takes no more steps and no other finish (409)', async () => {
  const { project, key } = await setUpProject(app);
  const run = await startRun(app, key, { timestamp: at(app, -1000) });
  app.clock.advance(after() + 1);
  await pass();
  expectError(await postSteps(app, key, run, [llm(0, 'late')]), 409, 'conflict');
  expectError(await postFinish(app, key, run, { status: 'completed' }), 409, 'conflict');
  expect(await readRun(app, key, project.id, run)).toMatchObject({ status: 'abandoned', total_steps: 0 });
  expect(await finishedRowCount(app, project.id, run.id)).toBe(1);
});

it('retires an abandoned run from live_runs, so running runs are live_runs FINAL', async () => {
  const { project, key } = await setUpProject(app);
  const run = await startRun(app, key);
  app.clock.advance(after() + 1);
  await pass();
  expect(await liveRowCount(app, project.id, run.id)).toBe(0);
  expect(await readRun(app, key, project.id, run)).toMatchObject({ status: 'abandoned' });
});

it('marks again the live row of a run that finished without its mark (a lost tombstone)', async () => {
  const { project, key } = await setUpProject(app);
  const run = await startRun(app, key, { agent_name: 'lost-mark' });
  await insertFinishedRowOnly(app, project.id, { ...run, agentName: 'lost-mark' });
  expect(await liveRowCount(app, project.id, run.id)).toBe(1);
  const marked = await pass();
  await app.ingest.drain();
  expect(idsOf(marked)).not.toContain(run.id);
  expect(await liveRowCount(app, project.id, run.id)).toBe(0);
  expect(await finishedRowCount(app, project.id, run.id)).toBe(1);
  expect(await readRun(app, key, project.id, run)).toMatchObject({ status: 'completed' });
});
