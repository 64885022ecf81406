// POST /ingest/agent/runs/{runID}/finish (contract §4, §6): the finished run, its derived fields, defaults and retries.
import { randomUUID } from 'node:crypto';
import { startTestApp, type TestApp } from '../support/app';
import { setUpProject } from '../support/fixtures';
import {
  at,
  expectError,
  expectFieldError,
  finishedRowCount,
  getRun,
  getSteps,
  keyAuth,
  listRuns,
  liveRowCount,
  llm,
  postFinish,
  postSteps,
  readRun,
  startRun,
  TEST_ENV,
  tool,
  withMicroseconds,
  withOffset,
} from './run-helpers';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp(TEST_ENV);
});
afterAll(() => app.close());

const MiB = 1024 * 1024;
const plus = (iso: string, ms: number) => new Date(new Date(iso).getTime() + ms).toISOString();
const finishRaw = (key: string, runId: string, json: string) =>
  app.http
    .post(`/ingest/agent/runs/${runId}/finish`)
    .set(keyAuth(key))
    .set('Content-Type', 'application/json')
    .send(json);

describe('success', () => {
  it('answers 200 with the finished run: duration, step totals, defaults; GET reads the same', async () => {
    const { project, key } = await setUpProject(app);
    const run = await startRun(app, key, {
      agent_name: 'writer',
      id: randomUUID(),
      timestamp: at(app, -60_000),
      input: 'task',
      metadata: [7, 8],
    });
    await postSteps(app, key, run, [
      llm(0, 'draft', { tokens: 100, cost_usd: 0.5 }),
      tool(1, 'spell', 'draft', 'ok', { tokens: 20, cost_usd: 0.25 }),
    ]);
    const finishedAt = plus(run.timestamp, 1234);
    const res = await postFinish(app, key, run, { finished_at: finishedAt, output: 'final text' });
    expect(res.status).toBe(200);
    const expected = {
      id: run.id,
      project_id: project.id,
      agent_name: 'writer',
      status: 'completed',
      timestamp: run.timestamp,
      finished_at: finishedAt,
      duration_ms: 1234,
      input: 'task',
      output: 'final text',
      loop_detected: false,
      loop_step_index: null,
      termination_reason: 'completed',
      termination_detail: null,
      total_steps: 2,
      total_tokens: 120,
      total_cost_usd: 0.75,
      metadata: [7, 8],
      session_id: null,
      user_id: null,
      tags: [],
    };
    expect(res.body).toEqual(expected);
    expect((await getRun(app, key, project.id, run.id, run.timestamp)).body).toEqual(expected);
    expect((await getRun(app, key, project.id, run.id)).body).toEqual(expected);
  });

  it('defaults finished_at to the server clock and derives duration_ms from it', async () => {
    const { key } = await setUpProject(app);
    const run = await startRun(app, key);
    app.clock.advance(5);
    try {
      const res = await postFinish(app, key, run);
      expect(res.body.finished_at).toBe(app.clock.now().toISOString());
      expect(res.body.duration_ms).toBe(5000);
    } finally {
      app.clock.advance(-5);
    }
  });

  it('takes finished_at equal to the start time (duration 0) and finished_at with an offset', async () => {
    const { key } = await setUpProject(app);
    const a = await startRun(app, key, { timestamp: at(app, -3000) });
    expect((await postFinish(app, key, a, { finished_at: a.timestamp })).body).toMatchObject({
      duration_ms: 0,
      finished_at: a.timestamp,
    });
    const b = await startRun(app, key, { timestamp: at(app, -3000) });
    const res = await postFinish(app, key, b, { finished_at: withOffset(plus(b.timestamp, 2500), 5) });
    expect(res.body).toMatchObject({ duration_ms: 2500, finished_at: plus(b.timestamp, 2500) });
  });

  it.each([
    ['completed', 'completed'],
    ['failed', 'error'],
    ['cancelled', 'cancelled'],
    ['timed_out', 'timeout'],
  ])('status %s defaults termination_reason to %s', async (status, reason) => {
    const { project, key } = await setUpProject(app);
    const run = await startRun(app, key);
    const res = await postFinish(app, key, run, { status });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status, termination_reason: reason, termination_detail: null });
    expect(await readRun(app, key, project.id, run)).toMatchObject({ status, termination_reason: reason });
  });

  it.each([
    ['completed', 'loop_detected'],
    ['failed', 'max_iterations'],
    ['failed', 'budget_exceeded'],
    ['timed_out', 'error'],
    ['cancelled', 'timeout'],
    ['completed', 'cancelled'],
  ])(
    'keeps an explicit termination_reason (status %s, reason %s) and its termination_detail',
    async (status, reason) => {
      const { project, key } = await setUpProject(app);
      const run = await startRun(app, key);
      const detail = `stopped: ${reason}`;
      const res = await postFinish(app, key, run, { status, termination_reason: reason, termination_detail: detail });
      expect(res.body).toMatchObject({ status, termination_reason: reason, termination_detail: detail });
      expect(await readRun(app, key, project.id, run)).toMatchObject({
        status,
        termination_reason: reason,
        termination_detail: detail,
      });
    },
  );

  it('takes a termination_detail of exactly 2000 characters and an output of exactly 1 MiB', async () => {
    const { project, key } = await setUpProject(app);
    const run = await startRun(app, key);
    const res = await postFinish(app, key, run, { termination_detail: 'd'.repeat(2000), output: 'o'.repeat(MiB) });
    expect(res.status).toBe(200);
    const read = await readRun(app, key, project.id, run);
    expect((read.termination_detail as string).length).toBe(2000);
    expect((read.output as string).length).toBe(MiB);
  });

  it('total_tokens and total_cost_usd sent at finish override the sums of the steps', async () => {
    const { project, key } = await setUpProject(app);
    const run = await startRun(app, key);
    await postSteps(app, key, run, [llm(0, 'a', { tokens: 100, cost_usd: 1 })]);
    const res = await postFinish(app, key, run, { total_tokens: 5000, total_cost_usd: 2.5 });
    expect(res.body).toMatchObject({ total_steps: 1, total_tokens: 5000, total_cost_usd: 2.5 });
    expect(await readRun(app, key, project.id, run)).toMatchObject({ total_tokens: 5000, total_cost_usd: 2.5 });
  });

  it('zero overrides are overrides too', async () => {
    const { key } = await setUpProject(app);
    const run = await startRun(app, key);
    await postSteps(app, key, run, [llm(0, 'a', { tokens: 100, cost_usd: 1 })]);
    expect((await postFinish(app, key, run, { total_tokens: 0, total_cost_usd: 0 })).body).toMatchObject({
      total_tokens: 0,
      total_cost_usd: 0,
    });
  });

  it("metadata sent at finish replaces the start's; left out, the start's stays", async () => {
    const { key } = await setUpProject(app);
    const replaced = await startRun(app, key, { metadata: [1, 2, 3] });
    expect((await postFinish(app, key, replaced, { metadata: [9.5] })).body.metadata).toEqual([9.5]);
    const emptied = await startRun(app, key, { metadata: [1, 2, 3] });
    expect((await postFinish(app, key, emptied, { metadata: [] })).body.metadata).toEqual([]);
    const kept = await startRun(app, key, { metadata: [1, 2, 3] });
    expect((await postFinish(app, key, kept)).body.metadata).toEqual([1, 2, 3]);
  });

  it('takes the last steps with the finish: merged with earlier ones by index, counted in the totals', async () => {
    const { project, key } = await setUpProject(app);
    const run = await startRun(app, key);
    await postSteps(app, key, run, [llm(0, 'a', { tokens: 1 }), llm(1, 'b', { tokens: 2 })]);
    const res = await postFinish(app, key, run, {
      steps: [llm(1, 'b2', { tokens: 20 }), tool(2, 'save', 'x', 'saved', { tokens: 300, cost_usd: 0.1 })],
    });
    expect(res.body).toMatchObject({ total_steps: 3, total_tokens: 321, total_cost_usd: 0.1 });
    const steps = (await getSteps(app, key, project.id, run.id, run.timestamp)).body;
    expect(steps.map((step: { output: string }) => step.output)).toEqual(['a', 'b2', 'saved']);
  });

  it('takes an empty steps array', async () => {
    const { key } = await setUpProject(app);
    const run = await startRun(app, key);
    expect((await postFinish(app, key, run, { steps: [] })).body).toMatchObject({
      status: 'completed',
      total_steps: 0,
    });
  });

  it('finds the run by its start time sent with microseconds, another offset or an upper-case id', async () => {
    const { key } = await setUpProject(app);
    const a = await startRun(app, key, { timestamp: withMicroseconds(at(app, -4000), '987') });
    expect((await postFinish(app, key, { id: a.id, timestamp: withMicroseconds(a.timestamp, '123') })).status).toBe(
      200,
    );
    const b = await startRun(app, key, { timestamp: at(app, -4000) });
    expect(
      (await postFinish(app, key, { id: b.id.toUpperCase(), timestamp: withOffset(b.timestamp, 9) })).body.id,
    ).toBe(b.id);
  });

  it('a run that never had steps finishes with zero totals', async () => {
    const { key } = await setUpProject(app);
    const run = await startRun(app, key);
    expect((await postFinish(app, key, run)).body).toMatchObject({
      total_steps: 0,
      total_tokens: 0,
      total_cost_usd: 0,
      loop_detected: false,
    });
  });
});

describe('retries and conflicts', () => {
  it('finishing again with the same body is a no-op: 200, the identical run, one row in `runs`', async () => {
    const { project, key } = await setUpProject(app);
    const run = await startRun(app, key, { id: randomUUID(), timestamp: at(app, -10_000) });
    await postSteps(app, key, run, [llm(0, 'a', { tokens: 3, cost_usd: 0.1 })]);
    const body = { status: 'failed', output: 'gave up', termination_detail: 'rate limited' };
    const first = await postFinish(app, key, run, body);
    expect(first.status).toBe(200);
    const again = await postFinish(app, key, run, body);
    const concurrent = await Promise.all([postFinish(app, key, run, body), postFinish(app, key, run, body)]);
    for (const res of [again, ...concurrent]) {
      expect(res.status).toBe(200);
      expect(res.body).toEqual(first.body);
    }
    expect(await finishedRowCount(app, project.id, run.id)).toBe(1);
    const list = await listRuns(app, key, project.id);
    expect(list.total).toBe(1);
    expect(list.runs).toEqual([first.body]);
  });

  it('a retry later (the clock moved on, no finished_at sent) returns the run as first finished', async () => {
    const { project, key } = await setUpProject(app);
    const run = await startRun(app, key);
    const first = await postFinish(app, key, run);
    app.clock.advance(30);
    try {
      const again = await postFinish(app, key, run);
      expect(again.body).toEqual(first.body);
    } finally {
      app.clock.advance(-30);
    }
    expect(await finishedRowCount(app, project.id, run.id)).toBe(1);
  });

  it('concurrent first finishes of one run write one row', async () => {
    const { project, key } = await setUpProject(app);
    const run = await startRun(app, key);
    const results = await Promise.all(
      Array.from({ length: 5 }, () => postFinish(app, key, run, { finished_at: plus(run.timestamp, 10) })),
    );
    for (const res of results) expect(res.body).toEqual(results[0].body);
    expect(await finishedRowCount(app, project.id, run.id)).toBe(1);
  });

  it('finishing again with a different status is 409 and changes nothing', async () => {
    const { project, key } = await setUpProject(app);
    const run = await startRun(app, key);
    const first = await postFinish(app, key, run, { status: 'completed' });
    expectError(await postFinish(app, key, run, { status: 'failed' }), 409, 'conflict');
    expectError(await postFinish(app, key, run, { status: 'cancelled' }), 409, 'conflict');
    expect(await readRun(app, key, project.id, run)).toEqual(first.body);
    expect(await finishedRowCount(app, project.id, run.id)).toBe(1);
  });

  it('steps after finish are 409', async () => {
    const { key } = await setUpProject(app);
    const run = await startRun(app, key);
    await postFinish(app, key, run);
    expectError(await postSteps(app, key, run, [llm(0, 'late')]), 409, 'conflict');
  });
});

describe('failures', () => {
  it('answers 404 to finishing a run never started (finish before start)', async () => {
    const { key } = await setUpProject(app);
    const run = { id: randomUUID(), timestamp: at(app, -1000) };
    expectError(await postFinish(app, key, run), 404, 'not_found');
    // The start arriving afterwards still starts the run, and then finish works.
    await startRun(app, key, run);
    expect((await postFinish(app, key, run)).status).toBe(200);
  });

  it("answers 404 when the timestamp is not the run's start time", async () => {
    const { project, key } = await setUpProject(app);
    const run = await startRun(app, key, { timestamp: at(app, -5000) });
    expectError(await postFinish(app, key, { id: run.id, timestamp: plus(run.timestamp, 1) }), 404, 'not_found');
    expectError(await postFinish(app, key, { id: run.id, timestamp: plus(run.timestamp, -1000) }), 404, 'not_found');
    expect(await readRun(app, key, project.id, run)).toMatchObject({ status: 'running' });
    expect(await finishedRowCount(app, project.id, run.id)).toBe(0);
  });

  it('refuses finished_at before the start time with 400', async () => {
    const { project, key } = await setUpProject(app);
    const run = await startRun(app, key, { timestamp: at(app, -5000) });
    expectFieldError(await postFinish(app, key, run, { finished_at: plus(run.timestamp, -1) }), 'finished_at');
    expect(await readRun(app, key, project.id, run)).toMatchObject({ status: 'running' });
  });

  it('refuses termination_reason abandoned with 400 (only the server abandons runs)', async () => {
    const { key } = await setUpProject(app);
    const run = await startRun(app, key);
    expectFieldError(
      await postFinish(app, key, run, { status: 'failed', termination_reason: 'abandoned' }),
      'termination_reason',
    );
  });

  it.each<[string, Record<string, unknown>, string]>([
    ['status running', { status: 'running' }, 'status'],
    ['status abandoned', { status: 'abandoned' }, 'status'],
    ['an unknown status', { status: 'done' }, 'status'],
    ['an unknown termination_reason', { termination_reason: 'bored' }, 'termination_reason'],
    ['termination_detail over 2000 characters', { termination_detail: 'd'.repeat(2001) }, 'termination_detail'],
    ['termination_detail a number', { termination_detail: 1 }, 'termination_detail'],
    ['output over 1 MiB', { output: 'o'.repeat(MiB + 1) }, 'output'],
    ['output null', { output: null }, 'output'],
    ['finished_at without an offset', { finished_at: '2026-01-01T00:00:00' }, 'finished_at'],
    ['negative total_tokens', { total_tokens: -1 }, 'total_tokens'],
    ['fractional total_tokens', { total_tokens: 1.5 }, 'total_tokens'],
    ['negative total_cost_usd', { total_cost_usd: -0.5 }, 'total_cost_usd'],
    ['total_cost_usd as a string', { total_cost_usd: '1.0' }, 'total_cost_usd'],
    ['metadata with a string', { metadata: ['x'] }, 'metadata.0'],
    [
      'a tool step without tool_name',
      { steps: [llm(0, 'a'), llm(1, 'a'), llm(2, 'b'), { index: 3, type: 'tool' }] },
      'steps.3.tool_name',
    ],
    ['more than 1000 steps', { steps: Array.from({ length: 1001 }, (_, i) => ({ index: i, type: 'other' })) }, 'steps'],
    ['an unknown field', { stauts: 'completed' }, 'stauts'],
    ['agent_name (a start field)', { agent_name: 'renamed' }, 'agent_name'],
  ])('refuses %s with 400 naming the field, and the run stays running', async (_name, body, path) => {
    const { project, key } = await setUpProject(app);
    const run = await startRun(app, key);
    expectFieldError(await postFinish(app, key, run, body), path);
    expect(await readRun(app, key, project.id, run)).toMatchObject({ status: 'running', total_steps: 0 });
  });

  it('refuses a missing status or timestamp with 400', async () => {
    const { key } = await setUpProject(app);
    const run = await startRun(app, key);
    const path = `/ingest/agent/runs/${run.id}/finish`;
    expectFieldError(await app.http.post(path).set(keyAuth(key)).send({ timestamp: run.timestamp }), 'status');
    expectFieldError(await app.http.post(path).set(keyAuth(key)).send({ status: 'completed' }), 'timestamp');
  });

  it('refuses non-finite numbers (a raw 1e999) for total_cost_usd, total_tokens and metadata with 400', async () => {
    const { project, key } = await setUpProject(app);
    const run = await startRun(app, key);
    const json = (extra: string) => `{"timestamp":"${run.timestamp}","status":"completed",${extra}}`;
    expectFieldError(await finishRaw(key, run.id, json('"total_cost_usd":1e999')), 'total_cost_usd');
    expectFieldError(await finishRaw(key, run.id, json('"total_tokens":1e999')), 'total_tokens');
    expectFieldError(await finishRaw(key, run.id, json('"metadata":[0,-1e999]')), 'metadata.1');
    expect(await readRun(app, key, project.id, run)).toMatchObject({ status: 'running' });
  });

  it('refuses an invalid runID with 400 invalid_id, malformed JSON with 400 and a non-JSON body with 415', async () => {
    const { key } = await setUpProject(app);
    const run = await startRun(app, key);
    expectError(
      await app.http
        .post('/ingest/agent/runs/123/finish')
        .set(keyAuth(key))
        .send({ timestamp: run.timestamp, status: 'completed' }),
      400,
      'invalid_id',
    );
    expectError(await finishRaw(key, run.id, '{"status":"completed"'), 400, 'malformed_json');
    expectError(
      await app.http
        .post(`/ingest/agent/runs/${run.id}/finish`)
        .set(keyAuth(key))
        .set('Content-Type', 'application/xml')
        .send('<finish/>'),
      415,
      'unsupported_media_type',
    );
  });
});

describe('live rows of finished runs', () => {
  // Reports read running runs as `live_runs FINAL`: a finished run must leave it, for good.
  it('retires the run from live_runs at finish; a late retry of its start does not bring it back', async () => {
    const { project, key } = await setUpProject(app);
    const run = await startRun(app, key);
    expect(await liveRowCount(app, project.id, run.id)).toBe(1);
    expect((await postFinish(app, key, run, { status: 'completed' })).status).toBe(200);
    // The tombstone is written after the answer (the run is already stored finished).
    await app.ingest.drain();
    expect(await liveRowCount(app, project.id, run.id)).toBe(0);
    const retry = await app.http
      .post('/ingest/agent/runs')
      .set(keyAuth(key))
      .send({ agent_name: 'agent', id: run.id, timestamp: run.timestamp });
    expect(retry.status).toBe(201);
    expect(await liveRowCount(app, project.id, run.id)).toBe(0);
    expect(await readRun(app, key, project.id, run)).toMatchObject({ status: 'completed' });
    expect(await listRuns(app, key, project.id)).toMatchObject({ total: 1, ids: [run.id] });
  });
});
