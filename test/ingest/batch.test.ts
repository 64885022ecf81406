// POST /ingest/agent/runs/batch (contract §4): starts and whole runs at once, one result per item, partial success.
import { randomUUID } from 'node:crypto';
import { uuidv7 } from '../../src/ids';
import { startTestApp, type TestApp } from '../support/app';
import { setUpProject } from '../support/fixtures';
import {
  at,
  expectError,
  expectFieldError,
  failingTool,
  finishedRowCount,
  getRun,
  getSteps,
  keyAuth,
  listRuns,
  liveRowCount,
  llm,
  postBatch,
  postFinish,
  postSteps,
  readRun,
  TEST_ENV,
  tool,
  UUID_V7,
} from './run-helpers';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp(TEST_ENV);
});
afterAll(() => app.close());

const plus = (iso: string, ms: number) => new Date(new Date(iso).getTime() + ms).toISOString();

interface ItemResult {
  id?: string;
  timestamp?: string;
  error?: { code: string; message: string };
}

describe('success', () => {
  it('starts several runs: 200, one { id, timestamp } per item in order; each reads back as running', async () => {
    const { project, key } = await setUpProject(app);
    const chosen = { id: randomUUID(), timestamp: at(app, -30_000) };
    const res = await postBatch(app, key, [
      { agent_name: 'a' },
      { agent_name: 'b', ...chosen, input: 'in', metadata: [4] },
      { agent_name: 'c' },
    ]);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body)).toEqual(['results']);
    const results = res.body.results as ItemResult[];
    expect(results).toHaveLength(3);
    expect(results[0]).toEqual({ id: expect.stringMatching(UUID_V7), timestamp: app.clock.now().toISOString() });
    expect(results[1]).toEqual(chosen);
    expect(results[2]).toEqual({ id: expect.stringMatching(UUID_V7), timestamp: app.clock.now().toISOString() });
    expect(new Set(results.map((result) => result.id)).size).toBe(3);
    for (const [i, name] of ['a', 'b', 'c'].entries()) {
      const run = await readRun(app, key, project.id, results[i] as { id: string; timestamp: string });
      expect(run).toMatchObject({ agent_name: name, status: 'running', finished_at: null });
    }
    expect(await readRun(app, key, project.id, chosen)).toMatchObject({ input: 'in', metadata: [4] });
  });

  it('a started run from a batch takes steps and a finish like any other', async () => {
    const { project, key } = await setUpProject(app);
    const [started] = (await postBatch(app, key, [{ agent_name: 'a' }])).body.results;
    expect((await postSteps(app, key, started, [llm(0, 'x', { tokens: 2 })])).status).toBe(200);
    expect((await postFinish(app, key, started)).body).toMatchObject({
      status: 'completed',
      total_steps: 1,
      total_tokens: 2,
    });
    expect(await readRun(app, key, project.id, started)).toMatchObject({ status: 'completed' });
  });

  it('records whole runs: finish fields, steps, totals, default termination reasons; readable with steps', async () => {
    const { project, key } = await setUpProject(app);
    const timestamp = at(app, -120_000);
    const whole = {
      agent_name: 'reporter',
      id: randomUUID(),
      timestamp,
      input: 'q',
      metadata: [1],
      status: 'completed',
      finished_at: plus(timestamp, 4321),
      output: 'answer',
      steps: [
        llm(0, 'thinking', { tokens: 50, cost_usd: 0.5 }),
        tool(1, 'search', '{"q":1}', 'hits', { tokens: 5, cost_usd: 0.25 }),
      ],
    };
    const failed = {
      agent_name: 'reporter',
      id: randomUUID(),
      timestamp,
      status: 'failed',
      finished_at: plus(timestamp, 10),
    };
    const timedOut = {
      agent_name: 'reporter',
      id: randomUUID(),
      timestamp,
      status: 'timed_out',
      finished_at: timestamp,
      termination_reason: 'budget_exceeded',
      termination_detail: 'spent',
      total_tokens: 9,
      total_cost_usd: 1.5,
      steps: [llm(0, 'a', { tokens: 1 })],
    };
    const res = await postBatch(app, key, [whole, failed, timedOut]);
    expect(res.status).toBe(200);
    expect(res.body.results).toEqual([
      { id: whole.id, timestamp },
      { id: failed.id, timestamp },
      { id: timedOut.id, timestamp },
    ]);

    expect(await readRun(app, key, project.id, whole)).toEqual({
      id: whole.id,
      project_id: project.id,
      agent_name: 'reporter',
      status: 'completed',
      timestamp,
      finished_at: whole.finished_at,
      duration_ms: 4321,
      input: 'q',
      output: 'answer',
      loop_detected: false,
      loop_step_index: null,
      termination_reason: 'completed',
      termination_detail: null,
      total_steps: 2,
      total_tokens: 55,
      total_cost_usd: 0.75,
      metadata: [1],
      session_id: null,
      user_id: null,
      tags: [],
    });
    expect((await getRun(app, key, project.id, whole.id)).body.status).toBe('completed');
    const steps = (await getSteps(app, key, project.id, whole.id, timestamp)).body;
    expect(steps).toMatchObject([
      { index: 0, type: 'llm', output: 'thinking', tokens: 50 },
      { index: 1, type: 'tool', tool_name: 'search', output: 'hits' },
    ]);

    expect(await readRun(app, key, project.id, failed)).toMatchObject({
      status: 'failed',
      termination_reason: 'error',
      duration_ms: 10,
      total_steps: 0,
      output: '',
    });
    expect(await readRun(app, key, project.id, timedOut)).toMatchObject({
      status: 'timed_out',
      termination_reason: 'budget_exceeded',
      termination_detail: 'spent',
      duration_ms: 0,
      total_steps: 1,
      total_tokens: 9,
      total_cost_usd: 1.5,
    });
    // A whole run is finished: it takes no steps and no other outcome; the same finish is a no-op.
    expectError(await postSteps(app, key, whole, [llm(2, 'late')]), 409, 'conflict');
    expectError(await postFinish(app, key, whole, { status: 'failed' }), 409, 'conflict');
    expect((await postFinish(app, key, whole, { status: 'completed' })).status).toBe(200);
    expect(await finishedRowCount(app, project.id, whole.id)).toBe(1);
  });

  it.each([
    ['completed', 'completed'],
    ['failed', 'error'],
    ['cancelled', 'cancelled'],
    ['timed_out', 'timeout'],
  ])('a whole run with status %s defaults termination_reason to %s and finished_at to now', async (status, reason) => {
    const { project, key } = await setUpProject(app);
    const [result] = (await postBatch(app, key, [{ agent_name: 'a', timestamp: at(app, -2000), status }])).body.results;
    expect(await readRun(app, key, project.id, result)).toMatchObject({
      status,
      termination_reason: reason,
      finished_at: app.clock.now().toISOString(),
      duration_ms: 2000,
    });
  });

  it('mixes starts and whole runs in one batch, and takes empty steps', async () => {
    const { project, key } = await setUpProject(app);
    const results = (
      await postBatch(app, key, [
        { agent_name: 'live' },
        { agent_name: 'done', status: 'completed', steps: [] },
        { agent_name: 'live-with-metadata', metadata: [1, 2] },
      ])
    ).body.results as { id: string; timestamp: string }[];
    expect((await readRun(app, key, project.id, results[0])).status).toBe('running');
    expect((await readRun(app, key, project.id, results[1])).status).toBe('completed');
    expect((await readRun(app, key, project.id, results[2])).metadata).toEqual([1, 2]);
  });

  it('takes 1000 items', async () => {
    const { project, key } = await setUpProject(app);
    const items = Array.from({ length: 1000 }, (_, i) =>
      i % 2 === 0 ? { agent_name: `a${i}` } : { agent_name: `a${i}`, status: 'completed' },
    );
    const res = await postBatch(app, key, items);
    expect(res.status).toBe(200);
    expect(res.body.results).toHaveLength(1000);
    expect((res.body.results as ItemResult[]).every((result) => result.id && !result.error)).toBe(true);
    expect(await readRun(app, key, project.id, res.body.results[998])).toMatchObject({
      agent_name: 'a998',
      status: 'running',
    });
    expect(await readRun(app, key, project.id, res.body.results[999])).toMatchObject({
      agent_name: 'a999',
      status: 'completed',
    });
  });
});

describe('partial success', () => {
  it('a bad item gets its own { error: { code, message } }; its neighbours are stored', async () => {
    const { project, key } = await setUpProject(app);
    const good = () => ({ agent_name: 'good', id: randomUUID(), timestamp: at(app, -1000) });
    const items: unknown[] = [
      good(),
      {
        agent_name: 'bad',
        status: 'completed',
        steps: [llm(0, 'a'), llm(1, 'b'), llm(2, 'c'), { index: 3, type: 'tool' }],
      },
      { ...good(), status: 'completed', steps: [tool(0, 'ok', 'x', 'y')] },
      { agent_name: '' },
      { agent_name: 'future', timestamp: at(app, 10 * 60_000) },
      { agent_name: 'typo', stauts: 'completed' },
      { agent_name: 'finish fields without status', output: 'x' },
      {
        agent_name: 'finishes before it starts',
        timestamp: at(app, -1000),
        finished_at: at(app, -2000),
        status: 'completed',
      },
      { agent_name: 'abandoned', status: 'completed', termination_reason: 'abandoned' },
      { agent_name: 'not a status', status: 'running' },
      { agent_name: 'bad id', id: 'abc' },
      42,
      null,
      'run',
      good(),
    ];
    const res = await postBatch(app, key, items);
    expect(res.status).toBe(200);
    const results = res.body.results as ItemResult[];
    expect(results).toHaveLength(items.length);

    const errorAt = (i: number) => {
      expect(results[i]).toEqual({ error: { code: 'validation_failed', message: expect.any(String) } });
      return results[i].error!.message;
    };
    expect(errorAt(1)).toContain('steps.3.tool_name');
    expect(errorAt(3)).toContain('agent_name');
    expect(errorAt(4)).toContain('timestamp');
    expect(errorAt(5)).toContain('stauts');
    expect(errorAt(6)).toContain('status');
    expect(errorAt(7)).toContain('finished_at');
    expect(errorAt(8)).toContain('termination_reason');
    expect(errorAt(9)).toContain('status');
    expect(errorAt(10)).toContain('id');
    errorAt(11);
    errorAt(12);
    errorAt(13);

    for (const i of [0, 2, 14]) {
      const item = items[i] as { id: string; timestamp: string };
      expect(results[i]).toEqual({ id: item.id, timestamp: item.timestamp });
      expect((await readRun(app, key, project.id, item)).agent_name).toBe('good');
    }
    expect((await readRun(app, key, project.id, items[2] as { id: string; timestamp: string })).status).toBe(
      'completed',
    );
  });

  it('a batch of only bad items is still 200 with an error per item', async () => {
    const { key } = await setUpProject(app);
    const res = await postBatch(app, key, [{}, { agent_name: 1 }]);
    expect(res.status).toBe(200);
    expect(res.body.results).toEqual([
      { error: { code: 'validation_failed', message: expect.stringContaining('agent_name') } },
      { error: { code: 'validation_failed', message: expect.stringContaining('agent_name') } },
    ]);
  });

  it('metadata as labels ({"env":"prod"}, as docs/ingest.md warns) fails its own item, not the others', async () => {
    const { key } = await setUpProject(app);
    const res = await postBatch(app, key, [
      { agent_name: 'a', metadata: { env: 'prod' } },
      { agent_name: 'b', metadata: [1, 0.5] },
    ]);
    expect(res.body.results).toEqual([
      {
        error: {
          code: 'validation_failed',
          message: 'metadata: Invalid input: expected array, received object',
        },
      },
      { id: expect.any(String), timestamp: expect.any(String) },
    ]);
  });

  it('a non-finite number (a raw 1e999) fails only its own item', async () => {
    const { project, key } = await setUpProject(app);
    const id = randomUUID();
    const timestamp = at(app, -1000);
    const json =
      `{"runs":[{"agent_name":"a","metadata":[1e999]},{"agent_name":"b","status":"completed","total_cost_usd":1e999},` +
      `{"agent_name":"c","id":"${id}","timestamp":"${timestamp}","status":"completed",` +
      '"steps":[{"index":0,"type":"llm","cost_usd":0.5}]}]}';
    const res = await app.http
      .post('/ingest/agent/runs/batch')
      .set(keyAuth(key))
      .set('Content-Type', 'application/json')
      .send(json);
    expect(res.status).toBe(200);
    expect(res.body.results[0].error.message).toContain('metadata');
    expect(res.body.results[1].error.message).toContain('total_cost_usd');
    expect(res.body.results[2]).toEqual({ id, timestamp });
    expect(await readRun(app, key, project.id, { id, timestamp })).toMatchObject({ total_cost_usd: 0.5 });
  });

  it('a whole run starting ahead of now, finished at the default "now", fails only its own item', async () => {
    const { project, key } = await setUpProject(app);
    const good = { agent_name: 'good', id: randomUUID(), timestamp: at(app, -1000), status: 'completed' };
    const res = await postBatch(app, key, [
      { agent_name: 'ahead', timestamp: at(app, 60_000), status: 'completed' },
      good,
    ]);
    expect(res.status).toBe(200);
    expect(res.body.results[0]).toEqual({
      error: { code: 'validation_failed', message: expect.stringContaining('finished_at') },
    });
    expect(res.body.results[1]).toEqual({ id: good.id, timestamp: good.timestamp });
    expect(await readRun(app, key, project.id, good)).toMatchObject({ status: 'completed' });
  });
});

describe('failures of the whole batch', () => {
  it.each<[string, unknown]>([
    ['no items', { runs: [] }],
    ['1001 items', { runs: Array.from({ length: 1001 }, () => ({ agent_name: 'a' })) }],
    ['runs missing', {}],
    ['runs not an array', { runs: { agent_name: 'a' } }],
    ['an unknown top-level field', { runs: [{ agent_name: 'a' }], flush: true }],
  ])('refuses %s with 400 and stores nothing', async (_name, body) => {
    const { key } = await setUpProject(app);
    const res = await app.http
      .post('/ingest/agent/runs/batch')
      .set(keyAuth(key))
      .send(body as object);
    expectError(res, 400, 'validation_failed');
  });

  it('1001 items: none of them is stored', async () => {
    const { project, key } = await setUpProject(app);
    const items = Array.from({ length: 1001 }, () => ({
      agent_name: 'a',
      id: randomUUID(),
      timestamp: at(app, -1000),
    }));
    expectFieldError(await postBatch(app, key, items), 'runs');
    expect(await liveRowCount(app, project.id, items[0].id)).toBe(0);
  });

  it('refuses malformed JSON (400), a non-JSON body (415) and a missing key (401)', async () => {
    const { key } = await setUpProject(app);
    expectError(
      await app.http
        .post('/ingest/agent/runs/batch')
        .set(keyAuth(key))
        .set('Content-Type', 'application/json')
        .send('{"runs":[{]}'),
      400,
      'malformed_json',
    );
    expectError(
      await app.http
        .post('/ingest/agent/runs/batch')
        .set(keyAuth(key))
        .set('Content-Type', 'text/csv')
        .send('agent_name\na'),
      415,
      'unsupported_media_type',
    );
    expectError(
      await app.http.post('/ingest/agent/runs/batch').send({ runs: [{ agent_name: 'a' }] }),
      401,
      'unauthenticated',
    );
  });
});

describe('idempotent retries', () => {
  it('takes the start time of an item with a UUIDv7 id and no timestamp from the id: retries are one run', async () => {
    const { project, key } = await setUpProject(app);
    const startedAt = app.clock.now().getTime() - 3000;
    const items = [
      { agent_name: 'a', id: uuidv7(startedAt) },
      { agent_name: 'a', id: uuidv7(startedAt + 1), status: 'completed', steps: [llm(0, 'x', { tokens: 2 })] },
    ];
    const first = await postBatch(app, key, items);
    app.clock.advance(2);
    const again = await postBatch(app, key, items);
    for (const res of [first, again]) {
      expect(res.status).toBe(200);
      expect(res.body.results).toEqual([
        { id: items[0].id, timestamp: new Date(startedAt).toISOString() },
        { id: items[1].id, timestamp: new Date(startedAt + 1).toISOString() },
      ]);
    }
    expect(await liveRowCount(app, project.id, items[0].id)).toBe(1);
    expect(await finishedRowCount(app, project.id, items[1].id)).toBe(1);
    expect(await listRuns(app, key, project.id)).toMatchObject({ total: 2 });
  });

  it('a batch of whole runs sent again stores no duplicates', async () => {
    const { project, key } = await setUpProject(app);
    const timestamp = at(app, -60_000);
    const items = Array.from({ length: 5 }, (_, i) => ({
      agent_name: 'a',
      id: randomUUID(),
      timestamp: plus(timestamp, i),
      status: 'completed',
      finished_at: plus(timestamp, 1000 + i),
      steps: [llm(0, `x${i}`, { tokens: 10 }), tool(1, 'search', String(i), 'ok', { tokens: 1 })],
    }));
    const first = await postBatch(app, key, items);
    const again = await postBatch(app, key, items);
    const concurrent = await Promise.all([postBatch(app, key, items), postBatch(app, key, items)]);
    for (const res of [again, ...concurrent]) {
      expect(res.status).toBe(200);
      expect(res.body).toEqual(first.body);
    }
    for (const item of items) {
      expect(await finishedRowCount(app, project.id, item.id)).toBe(1);
      expect(await readRun(app, key, project.id, item)).toMatchObject({
        status: 'completed',
        total_steps: 2,
        total_tokens: 11,
      });
      expect((await getSteps(app, key, project.id, item.id, item.timestamp)).body).toHaveLength(2);
    }
    const list = await listRuns(app, key, project.id);
    expect(list.total).toBe(items.length);
    expect([...list.ids].sort()).toEqual(items.map((item) => item.id).sort());
  });

  it('a retried batch where only some runs were new stores the new ones once and leaves the others alone', async () => {
    const { project, key } = await setUpProject(app);
    const whole = (agent: string) => ({
      agent_name: agent,
      id: randomUUID(),
      timestamp: at(app, -5000),
      status: 'completed',
    });
    const [a, b] = [whole('a'), whole('b')];
    await postBatch(app, key, [a]);
    await postBatch(app, key, [a, b, { ...a }]);
    expect(await finishedRowCount(app, project.id, a.id)).toBe(1);
    expect(await finishedRowCount(app, project.id, b.id)).toBe(1);
  });

  it('the same whole run twice in one batch is stored once', async () => {
    const { project, key } = await setUpProject(app);
    const item = { agent_name: 'a', id: randomUUID(), timestamp: at(app, -5000), status: 'completed' };
    const res = await postBatch(app, key, [item, item]);
    expect(res.body.results).toEqual([
      { id: item.id, timestamp: item.timestamp },
      { id: item.id, timestamp: item.timestamp },
    ]);
    expect(await finishedRowCount(app, project.id, item.id)).toBe(1);
  });

  it('a batch of starts sent again creates each run once', async () => {
    const { project, key } = await setUpProject(app);
    const items = Array.from({ length: 4 }, () => ({ agent_name: 'a', id: randomUUID(), timestamp: at(app, -3000) }));
    await postBatch(app, key, items);
    await postBatch(app, key, items);
    for (const item of items) {
      expect(await liveRowCount(app, project.id, item.id)).toBe(1);
      expect((await readRun(app, key, project.id, item)).status).toBe('running');
    }
    expect((await listRuns(app, key, project.id)).total).toBe(items.length);
  });

  it('a whole run sent by batch for a run already finished by the finish call is not counted twice', async () => {
    const { project, key } = await setUpProject(app);
    const run = { id: randomUUID(), timestamp: at(app, -3000) };
    await postBatch(app, key, [{ agent_name: 'a', ...run }]);
    await postFinish(app, key, run, { status: 'completed' });
    expect((await postBatch(app, key, [{ agent_name: 'a', ...run, status: 'completed' }])).status).toBe(200);
    expect(await finishedRowCount(app, project.id, run.id)).toBe(1);
  });
});

describe('loops in whole runs', () => {
  it("detects a loop in a whole run's steps", async () => {
    const { project, key } = await setUpProject(app);
    const steps = [llm(0, 'plan'), ...[1, 2, 3].map((i) => failingTool(i, 'deploy', '{"env":"prod"}', `error ${i}`))];
    const [result] = (await postBatch(app, key, [{ agent_name: 'a', status: 'failed', steps }])).body.results;
    expect(await readRun(app, key, project.id, result)).toMatchObject({
      loop_detected: true,
      loop_step_index: 1,
      status: 'failed',
    });
  });
});

describe('concurrent copies of a whole run', () => {
  it('a whole run sent by concurrent batches (a retry while the first is still in flight) is stored once', async () => {
    const { project, key } = await setUpProject(app);
    const run = { agent_name: 'a', id: randomUUID(), timestamp: at(app, -3000), status: 'completed' };
    const responses = await Promise.all([
      postBatch(app, key, [run]),
      postBatch(app, key, [run]),
      postBatch(app, key, [run]),
    ]);
    for (const res of responses) expect(res.status).toBe(200);
    expect(await finishedRowCount(app, project.id, run.id)).toBe(1);
  });

  it('a finish racing a batch that carries the same run whole leaves one row', async () => {
    const { project, key } = await setUpProject(app);
    const run = { id: randomUUID(), timestamp: at(app, -3000) };
    await postBatch(app, key, [{ agent_name: 'a', ...run }]);
    const [finish, batch] = await Promise.all([
      postFinish(app, key, run, { status: 'completed' }),
      postBatch(app, key, [{ agent_name: 'a', ...run, status: 'completed' }]),
    ]);
    expect([finish.status, batch.status]).toEqual([200, 200]);
    expect(await finishedRowCount(app, project.id, run.id)).toBe(1);
  });
});
