// POST /ingest/agent/runs/{runID}/steps (contract §4, §6): appending steps to a running run, replacing by index.
import { randomUUID } from 'node:crypto';
import { startTestApp, type TestApp } from '../support/app';
import { setUpProject } from '../support/fixtures';
import {
  at,
  expectError,
  expectFieldError,
  getSteps,
  keyAuth,
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

describe('success', () => {
  it('answers 200 with the run key, total_steps and no loop; the steps read back with every field', async () => {
    const { project, key } = await setUpProject(app);
    const run = await startRun(app, key, { id: randomUUID(), timestamp: at(app, -10_000) });
    const startedAt = withOffset(at(app, -9000), 1);
    const res = await postSteps(app, key, run, [
      {
        index: 0,
        type: 'llm',
        name: 'plan',
        model: 'gpt-x',
        input: 'prompt',
        output: 'answer',
        tokens: 120,
        cost_usd: 0.25,
        started_at: startedAt,
        duration_ms: 800,
      },
      {
        index: 1,
        type: 'tool',
        name: 'look up',
        tool_name: 'search',
        input: '{"q":"x"}',
        output: 'found',
        tokens: 0,
        cost_usd: 0,
        duration_ms: 15,
      },
      { index: 2, type: 'retrieval', output: 'docs' },
      { index: 3, type: 'other', error: 'hiccup' },
    ]);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      id: run.id,
      timestamp: run.timestamp,
      total_steps: 4,
      loop_detected: false,
      loop_step_index: null,
    });

    const steps = await getSteps(app, key, project.id, run.id, run.timestamp);
    expect(steps.status).toBe(200);
    expect(steps.body).toEqual([
      {
        index: 0,
        type: 'llm',
        name: 'plan',
        tool_name: null,
        model: 'gpt-x',
        input: 'prompt',
        output: 'answer',
        tokens: 120,
        input_tokens: null,
        output_tokens: null,
        cost_usd: 0.25,
        started_at: new Date(startedAt).toISOString(),
        duration_ms: 800,
        error: null,
      },
      {
        index: 1,
        type: 'tool',
        name: 'look up',
        tool_name: 'search',
        model: null,
        input: '{"q":"x"}',
        output: 'found',
        tokens: 0,
        input_tokens: null,
        output_tokens: null,
        cost_usd: 0,
        started_at: null,
        duration_ms: 15,
        error: null,
      },
      {
        index: 2,
        type: 'retrieval',
        name: null,
        tool_name: null,
        model: null,
        input: '',
        output: 'docs',
        tokens: null,
        input_tokens: null,
        output_tokens: null,
        cost_usd: null,
        started_at: null,
        duration_ms: null,
        error: null,
      },
      {
        index: 3,
        type: 'other',
        name: null,
        tool_name: null,
        model: null,
        input: '',
        output: '',
        tokens: null,
        input_tokens: null,
        output_tokens: null,
        cost_usd: null,
        started_at: null,
        duration_ms: null,
        error: 'hiccup',
      },
    ]);
    expect(await readRun(app, key, project.id, run)).toMatchObject({
      status: 'running',
      total_steps: 4,
      total_tokens: 120,
      total_cost_usd: 0.25,
      loop_detected: false,
      loop_step_index: null,
      finished_at: null,
    });
  });

  it('appends further calls and keeps running totals', async () => {
    const { project, key } = await setUpProject(app);
    const run = await startRun(app, key);
    expect((await postSteps(app, key, run, [llm(0, 'a', { tokens: 10, cost_usd: 0.1 })])).body.total_steps).toBe(1);
    expect(
      (await postSteps(app, key, run, [llm(1, 'b', { tokens: 20, cost_usd: 0.2 }), tool(2, 'calc', '1+1', '2')])).body
        .total_steps,
    ).toBe(3);
    expect((await postSteps(app, key, run, [llm(5, 'c', { tokens: 5 })])).body.total_steps).toBe(4);
    const read = await readRun(app, key, project.id, run);
    expect(read).toMatchObject({ total_steps: 4, total_tokens: 35 });
    expect(read.total_cost_usd).toBeCloseTo(0.3, 10);
    const steps = await getSteps(app, key, project.id, run.id, run.timestamp);
    expect(steps.body.map((step: { index: number }) => step.index)).toEqual([0, 1, 2, 5]);
  });

  it('re-sending a step with the same index replaces it: total_steps unchanged, the new content visible', async () => {
    const { project, key } = await setUpProject(app);
    const run = await startRun(app, key);
    await postSteps(app, key, run, [
      llm(0, 'first', { tokens: 10 }),
      tool(1, 'search', 'q', 'old result', { tokens: 1 }),
    ]);
    const again = await postSteps(app, key, run, [tool(1, 'fetch', 'url', 'new result', { tokens: 7 })]);
    expect(again.status).toBe(200);
    expect(again.body.total_steps).toBe(2);
    const steps = (await getSteps(app, key, project.id, run.id, run.timestamp)).body;
    expect(steps).toHaveLength(2);
    expect(steps[1]).toMatchObject({ index: 1, tool_name: 'fetch', input: 'url', output: 'new result', tokens: 7 });
    expect(await readRun(app, key, project.id, run)).toMatchObject({ total_steps: 2, total_tokens: 17 });
  });

  it('a retried steps call (same body) changes nothing', async () => {
    const { project, key } = await setUpProject(app);
    const run = await startRun(app, key);
    const steps = [llm(0, 'a', { tokens: 3 }), llm(1, 'b', { tokens: 4 })];
    const first = await postSteps(app, key, run, steps);
    const retries = await Promise.all([postSteps(app, key, run, steps), postSteps(app, key, run, steps)]);
    for (const res of retries) expect(res.body).toEqual(first.body);
    expect(await readRun(app, key, project.id, run)).toMatchObject({ total_steps: 2, total_tokens: 7 });
    expect((await getSteps(app, key, project.id, run.id, run.timestamp)).body).toHaveLength(2);
  });

  it('concurrent steps calls of one run all count', async () => {
    const { project, key } = await setUpProject(app);
    const run = await startRun(app, key);
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => postSteps(app, key, run, [llm(i, `out ${i}`, { tokens: 1 })])),
    );
    for (const res of results) expect(res.status).toBe(200);
    expect(await readRun(app, key, project.id, run)).toMatchObject({ total_steps: 10, total_tokens: 10 });
  });

  it('takes exactly 1000 steps in one call, and steps sent in any order read back by index', async () => {
    const { project, key } = await setUpProject(app);
    const run = await startRun(app, key);
    const steps = Array.from({ length: 1000 }, (_, i) => ({
      index: 999 - i,
      type: 'other',
      output: `step ${999 - i}`,
    }));
    const res = await postSteps(app, key, run, steps);
    expect(res.status).toBe(200);
    expect(res.body.total_steps).toBe(1000);
    const read = (await getSteps(app, key, project.id, run.id, run.timestamp)).body as { index: number }[];
    expect(read.map((step) => step.index)).toEqual(Array.from({ length: 1000 }, (_, i) => i));
  });

  it('takes steps whose strings are up to 1 MiB each, over the general body limit (ingest allows 10 MiB)', async () => {
    const { project, key } = await setUpProject(app);
    const run = await startRun(app, key);
    const big = 'y'.repeat(MiB);
    const res = await postSteps(app, key, run, [
      { index: 0, type: 'llm', input: big, output: big },
      { index: 1, type: 'tool', tool_name: 't', input: big },
    ]);
    expect(res.status).toBe(200);
    const steps = (await getSteps(app, key, project.id, run.id, run.timestamp)).body;
    expect(steps[0].output.length).toBe(MiB);
  });

  it('finds the run by its start time sent with microseconds or another offset', async () => {
    const { key } = await setUpProject(app);
    const run = await startRun(app, key, { timestamp: at(app, -5000) });
    expect(
      (await postSteps(app, key, { id: run.id, timestamp: withMicroseconds(run.timestamp) }, [llm(0, 'a')])).status,
    ).toBe(200);
    expect(
      (await postSteps(app, key, { id: run.id, timestamp: withOffset(run.timestamp, -3) }, [llm(1, 'b')])).body
        .total_steps,
    ).toBe(2);
    expect(
      (await postSteps(app, key, { id: run.id.toUpperCase(), timestamp: run.timestamp }, [llm(2, 'c')])).body
        .total_steps,
    ).toBe(3);
  });
});

describe('failures', () => {
  it('refuses a runID that is not a UUID with 400 invalid_id', async () => {
    const { key } = await setUpProject(app);
    const res = await app.http
      .post('/ingest/agent/runs/not-a-uuid/steps')
      .set(keyAuth(key))
      .send({ timestamp: at(app), steps: [llm(0, 'a')] });
    expectError(res, 400, 'invalid_id');
  });

  it('answers 404 for a run that was never started', async () => {
    const { key } = await setUpProject(app);
    expectError(await postSteps(app, key, { id: randomUUID(), timestamp: at(app) }, [llm(0, 'a')]), 404, 'not_found');
  });

  it("answers 404 when the timestamp is not the run's start time (a wrong timestamp is a wrong run)", async () => {
    const { project, key } = await setUpProject(app);
    const run = await startRun(app, key, { timestamp: at(app, -5000) });
    expectError(await postSteps(app, key, { id: run.id, timestamp: at(app, -4999) }, [llm(0, 'a')]), 404, 'not_found');
    expectError(await postSteps(app, key, { id: run.id, timestamp: at(app, -6000) }, [llm(0, 'a')]), 404, 'not_found');
    expect(await readRun(app, key, project.id, run)).toMatchObject({ total_steps: 0 });
  });

  it('answers 409 to steps sent to a finished run, and stores none of them', async () => {
    const { project, key } = await setUpProject(app);
    const run = await startRun(app, key);
    await postSteps(app, key, run, [llm(0, 'a')]);
    expect((await postFinish(app, key, run)).status).toBe(200);
    expectError(await postSteps(app, key, run, [llm(1, 'b')]), 409, 'conflict');
    expectError(await postSteps(app, key, run, [llm(0, 'replaced')]), 409, 'conflict');
    expect((await getSteps(app, key, project.id, run.id, run.timestamp)).body).toMatchObject([
      { index: 0, output: 'a' },
    ]);
    expect(await readRun(app, key, project.id, run)).toMatchObject({ total_steps: 1, status: 'completed' });
  });

  it.each<[string, unknown[], string]>([
    [
      'a tool step without tool_name',
      [llm(0, 'a'), llm(1, 'b'), llm(2, 'c'), { index: 3, type: 'tool', input: 'x' }],
      'steps.3.tool_name',
    ],
    ['a tool step with an empty tool_name', [{ index: 0, type: 'tool', tool_name: '' }], 'steps.0.tool_name'],
    ['a tool step with a null tool_name', [{ index: 0, type: 'tool', tool_name: null }], 'steps.0.tool_name'],
    ['a negative index', [{ index: -1, type: 'llm' }], 'steps.0.index'],
    ['a fractional index', [{ index: 1.5, type: 'llm' }], 'steps.0.index'],
    ['an index given as a string', [{ index: '1', type: 'llm' }], 'steps.0.index'],
    ['a missing index', [{ type: 'llm' }], 'steps.0.index'],
    ['an unknown type', [{ index: 0, type: 'thought' }], 'steps.0.type'],
    ['a missing type', [{ index: 0 }], 'steps.0.type'],
    ['negative tokens', [llm(0, 'a', { tokens: -1 })], 'steps.0.tokens'],
    ['fractional tokens', [llm(0, 'a', { tokens: 1.5 })], 'steps.0.tokens'],
    ['a negative cost', [llm(0, 'a', { cost_usd: -0.01 })], 'steps.0.cost_usd'],
    ['a cost given as a string', [llm(0, 'a', { cost_usd: '0.1' })], 'steps.0.cost_usd'],
    ['a negative duration', [llm(0, 'a', { duration_ms: -5 })], 'steps.0.duration_ms'],
    ['a started_at without an offset', [llm(0, 'a', { started_at: '2026-01-01 10:00:00' })], 'steps.0.started_at'],
    ['an output that is not a string', [{ index: 0, type: 'llm', output: { text: 'a' } }], 'steps.0.output'],
    ['an output over 1 MiB', [{ index: 0, type: 'llm', output: 'z'.repeat(MiB + 1) }], 'steps.0.output'],
    ['an input over 1 MiB', [llm(0, 'a'), { index: 1, type: 'llm', input: 'z'.repeat(MiB + 1) }], 'steps.1.input'],
    ['an error over 1 MiB', [{ index: 0, type: 'tool', tool_name: 't', error: 'z'.repeat(MiB + 1) }], 'steps.0.error'],
    ['a step that is not an object', [llm(0, 'a'), 'step'], 'steps.1'],
  ])('refuses %s with 400 naming the field', async (_name, steps, path) => {
    const { project, key } = await setUpProject(app);
    const run = await startRun(app, key);
    expectFieldError(await postSteps(app, key, run, steps), path);
    // A refused call stores none of its steps, not even the valid ones.
    expect((await getSteps(app, key, project.id, run.id, run.timestamp)).body).toEqual([]);
  });

  it('refuses an unknown field in a step with 400, its details pointing into that step', async () => {
    const { key } = await setUpProject(app);
    const run = await startRun(app, key);
    const res = await postSteps(app, key, run, [
      llm(0, 'a'),
      llm(1, 'b'),
      llm(2, 'c'),
      { ...tool(3, 't'), tool: 'typo' },
    ]);
    expectError(res, 400, 'validation_failed');
    expect(res.body.error.details).toHaveLength(1);
    expect(res.body.error.details[0].path).toBe('steps.3.tool');
  });

  it('refuses an unknown top-level field with 400', async () => {
    const { key } = await setUpProject(app);
    const run = await startRun(app, key);
    const res = await app.http
      .post(`/ingest/agent/runs/${run.id}/steps`)
      .set(keyAuth(key))
      .send({ timestamp: run.timestamp, steps: [llm(0, 'a')], status: 'completed' });
    expectFieldError(res, 'status');
  });

  it('refuses more than 1000 steps in one call with 400', async () => {
    const { key } = await setUpProject(app);
    const run = await startRun(app, key);
    const steps = Array.from({ length: 1001 }, (_, i) => ({ index: i, type: 'other' }));
    expectFieldError(await postSteps(app, key, run, steps), 'steps');
  });

  it('refuses a missing or malformed timestamp and missing steps with 400', async () => {
    const { key } = await setUpProject(app);
    const run = await startRun(app, key);
    const path = `/ingest/agent/runs/${run.id}/steps`;
    expectFieldError(
      await app.http
        .post(path)
        .set(keyAuth(key))
        .send({ steps: [llm(0, 'a')] }),
      'timestamp',
    );
    expectFieldError(
      await app.http
        .post(path)
        .set(keyAuth(key))
        .send({ timestamp: 'now', steps: [llm(0, 'a')] }),
      'timestamp',
    );
    expectFieldError(await app.http.post(path).set(keyAuth(key)).send({ timestamp: run.timestamp }), 'steps');
    expectFieldError(
      await app.http
        .post(path)
        .set(keyAuth(key))
        .send({ timestamp: run.timestamp, steps: llm(0, 'a') }),
      'steps',
    );
  });

  it('refuses non-finite numbers (a raw 1e999) with 400', async () => {
    const { key } = await setUpProject(app);
    const run = await startRun(app, key);
    const raw = (step: string) =>
      app.http
        .post(`/ingest/agent/runs/${run.id}/steps`)
        .set(keyAuth(key))
        .set('Content-Type', 'application/json')
        .send(`{"timestamp":"${run.timestamp}","steps":[${step}]}`);
    expectFieldError(await raw('{"index":0,"type":"llm","cost_usd":1e999}'), 'steps.0.cost_usd');
    expectFieldError(await raw('{"index":0,"type":"llm","tokens":1e999}'), 'steps.0.tokens');
    expectFieldError(await raw('{"index":1e999,"type":"llm"}'), 'steps.0.index');
  });

  it('refuses malformed JSON (400) and a body that is not JSON (415)', async () => {
    const { key } = await setUpProject(app);
    const run = await startRun(app, key);
    const path = `/ingest/agent/runs/${run.id}/steps`;
    expectError(
      await app.http.post(path).set(keyAuth(key)).set('Content-Type', 'application/json').send('{"timestamp":'),
      400,
      'malformed_json',
    );
    expectError(
      await app.http.post(path).set(keyAuth(key)).set('Content-Type', 'text/plain').send('steps'),
      415,
      'unsupported_media_type',
    );
  });
});

describe('an empty steps list', () => {
  it('is allowed ("wherever steps are") and answers the run\'s totals without changing them', async () => {
    const { project, key } = await setUpProject(app);
    const run = await startRun(app, key);
    expect((await postSteps(app, key, run, [llm(0, 'a', { tokens: 2 })])).status).toBe(200);
    const res = await postSteps(app, key, run, []);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      id: run.id,
      timestamp: run.timestamp,
      total_steps: 1,
      loop_detected: false,
      loop_step_index: null,
    });
    expect(await readRun(app, key, project.id, run)).toMatchObject({ total_steps: 1, total_tokens: 2 });
  });
});
