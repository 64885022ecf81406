// POST /ingest/agent/runs (contract §4): starting a run, its defaults, its validation and idempotent retries.
import { randomUUID } from 'node:crypto';
import { uuidv7 } from '../../src/ids';
import { startTestApp, type TestApp } from '../support/app';
import { setUpProject } from '../support/fixtures';
import {
  at,
  expectError,
  expectFieldError,
  getRun,
  getSteps,
  keyAuth,
  listRuns,
  liveRowCount,
  postSteps,
  readRun,
  startRun,
  TEST_ENV,
  TIMESTAMP,
  UUID_V7,
  withMicroseconds,
  withOffset,
} from './run-helpers';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp(TEST_ENV);
});
afterAll(() => app.close());

const MiB = 1024 * 1024;
const start = (key: string, body: unknown) =>
  app.http
    .post('/ingest/agent/runs')
    .set(keyAuth(key))
    .send(body as object);
const startRaw = (key: string, json: string) =>
  app.http.post('/ingest/agent/runs').set(keyAuth(key)).set('Content-Type', 'application/json').send(json);

describe('success', () => {
  it('answers 201 with a new UUIDv7, the server clock as default start time; the run reads as running', async () => {
    const { project, key } = await setUpProject(app);
    const now = app.clock.now();
    const res = await start(key, { agent_name: 'planner' });
    expect(res.status).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual(['id', 'timestamp']);
    expect(res.body.id).toMatch(UUID_V7);
    expect(res.body.timestamp).toBe(now.toISOString());
    // A UUIDv7 carries its creation time (ms) in its first 48 bits: the server's clock.
    expect(parseInt(res.body.id.replace(/-/g, '').slice(0, 12), 16)).toBe(now.getTime());

    const run = await readRun(app, key, project.id, res.body);
    expect(run).toEqual({
      id: res.body.id,
      project_id: project.id,
      agent_name: 'planner',
      status: 'running',
      timestamp: now.toISOString(),
      finished_at: null,
      duration_ms: null,
      input: '',
      output: '',
      loop_detected: false,
      loop_step_index: null,
      termination_reason: null,
      termination_detail: null,
      total_steps: 0,
      total_tokens: 0,
      total_cost_usd: 0,
      metadata: [],
      session_id: null,
      user_id: null,
      tags: [],
    });
  });

  it('gives two starts without an id two different ids', async () => {
    const { key } = await setUpProject(app);
    const [a, b] = await Promise.all([startRun(app, key), startRun(app, key)]);
    expect(a.id).not.toBe(b.id);
  });

  it('keeps a client-chosen id and start time, input and metadata', async () => {
    const { project, key } = await setUpProject(app);
    const id = randomUUID();
    const timestamp = at(app, -60_000);
    const res = await start(key, {
      agent_name: 'coder',
      id,
      timestamp,
      input: 'fix the bug',
      metadata: [1, 2.5, -3, 0],
    });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ id, timestamp });
    const run = await readRun(app, key, project.id, res.body);
    expect(run).toMatchObject({
      id,
      timestamp,
      agent_name: 'coder',
      input: 'fix the bug',
      metadata: [1, 2.5, -3, 0],
      status: 'running',
    });
  });

  it('stores an upper-case client id in canonical lower case', async () => {
    const { project, key } = await setUpProject(app);
    const id = randomUUID();
    const res = await start(key, { agent_name: 'a', id: id.toUpperCase(), timestamp: at(app) });
    expect(res.status).toBe(201);
    expect(res.body.id).toBe(id);
    expect((await getRun(app, key, project.id, id.toUpperCase())).body.id).toBe(id);
  });

  it('normalizes a start time sent with an offset to UTC with milliseconds', async () => {
    const { project, key } = await setUpProject(app);
    const utc = new Date(Math.floor(app.clock.now().getTime() / 1000) * 1000 - 3_600_000).toISOString();
    const res = await start(key, { agent_name: 'a', timestamp: withOffset(utc, 2).replace('.000', '') });
    expect(res.status).toBe(201);
    expect(res.body.timestamp).toBe(utc);
    expect((await readRun(app, key, project.id, res.body)).timestamp).toBe(utc);
    // The same instant written with another offset is the same run.
    expect((await getRun(app, key, project.id, res.body.id, withOffset(utc, -5))).body.timestamp).toBe(utc);
  });

  it('truncates a start time with microseconds to the millisecond, says so, finds the run by either form', async () => {
    const { project, key } = await setUpProject(app);
    const ms = at(app, -2000);
    const res = await start(key, { agent_name: 'a', timestamp: withMicroseconds(ms, '456') });
    expect(res.status).toBe(201);
    expect(res.body.timestamp).toBe(ms);
    expect(res.body.timestamp).toMatch(TIMESTAMP);
    for (const timestamp of [withMicroseconds(ms, '456'), ms, withMicroseconds(ms, '999')]) {
      const read = await getRun(app, key, project.id, res.body.id, timestamp);
      expect(read.status).toBe(200);
      expect(read.body.timestamp).toBe(ms);
    }
    const steps = await postSteps(app, key, { id: res.body.id, timestamp: withMicroseconds(ms, '456') }, [
      { index: 0, type: 'llm' },
    ]);
    expect(steps.status).toBe(200);
    expect(steps.body.timestamp).toBe(ms);
    expect((await getSteps(app, key, project.id, res.body.id, ms)).body).toHaveLength(1);
  });

  it('takes a start time up to 5 minutes in the future', async () => {
    const { key } = await setUpProject(app);
    expect((await start(key, { agent_name: 'a', timestamp: at(app, 4 * 60_000) })).status).toBe(201);
    expect((await start(key, { agent_name: 'a', timestamp: at(app, 5 * 60_000) })).status).toBe(201);
  });

  it('takes an input of exactly 1 MiB and 1024 metadata values', async () => {
    const { project, key } = await setUpProject(app);
    const input = 'x'.repeat(MiB);
    const metadata = Array.from({ length: 1024 }, (_, i) => i / 4);
    const res = await start(key, { agent_name: 'a'.repeat(200), input, metadata });
    expect(res.status).toBe(201);
    const run = await readRun(app, key, project.id, res.body);
    expect((run.input as string).length).toBe(MiB);
    expect(run.metadata).toEqual(metadata);
  });
});

describe('validation', () => {
  it.each<[string, Record<string, unknown>, string]>([
    ['agent_name missing', {}, 'agent_name'],
    ['agent_name empty', { agent_name: '' }, 'agent_name'],
    ['agent_name over 200 characters', { agent_name: 'a'.repeat(201) }, 'agent_name'],
    ['agent_name a number', { agent_name: 7 }, 'agent_name'],
    ['agent_name null', { agent_name: null }, 'agent_name'],
    ['input a number', { agent_name: 'a', input: 5 }, 'input'],
    ['input null', { agent_name: 'a', input: null }, 'input'],
    ['input over 1 MiB', { agent_name: 'a', input: 'x'.repeat(MiB + 1) }, 'input'],
    ['metadata not an array', { agent_name: 'a', metadata: { a: 1 } }, 'metadata'],
    ['metadata with a string', { agent_name: 'a', metadata: [1, '2'] }, 'metadata.1'],
    ['metadata over 1024 values', { agent_name: 'a', metadata: Array.from({ length: 1025 }, () => 1) }, 'metadata'],
    ['id not a UUID', { agent_name: 'a', id: 'run-1' }, 'id'],
    ['id a number', { agent_name: 'a', id: 12 }, 'id'],
    ['timestamp without an offset', { agent_name: 'a', timestamp: '2026-01-02T03:04:05' }, 'timestamp'],
    ['timestamp a date only', { agent_name: 'a', timestamp: '2026-01-02' }, 'timestamp'],
    ['timestamp as epoch milliseconds', { agent_name: 'a', timestamp: 1767322800000 }, 'timestamp'],
    ['timestamp not a date', { agent_name: 'a', timestamp: 'yesterday' }, 'timestamp'],
  ])('refuses %s with 400 naming the field', async (_name, body, path) => {
    const { key } = await setUpProject(app);
    expectFieldError(await start(key, body), path);
  });

  it('refuses an unknown field (strict) with 400, naming it', async () => {
    const { key } = await setUpProject(app);
    const res = await start(key, { agent_name: 'a', agent_nmae: 'typo' });
    expectFieldError(res, 'agent_nmae');
  });

  it('refuses finish fields on a plain start', async () => {
    const { key } = await setUpProject(app);
    expectError(await start(key, { agent_name: 'a', status: 'completed' }), 400, 'validation_failed');
  });

  it('refuses a start time more than 5 minutes in the future', async () => {
    const { key } = await setUpProject(app);
    expectFieldError(await start(key, { agent_name: 'a', timestamp: at(app, 5 * 60_000 + 1000) }), 'timestamp');
    expectFieldError(await start(key, { agent_name: 'a', timestamp: at(app, 86_400_000) }), 'timestamp');
  });

  it.each([
    ['metadata', '{"agent_name":"a","metadata":[1,1e999]}'],
    ['negative infinity in metadata', '{"agent_name":"a","metadata":[-1e999]}'],
  ])('refuses a non-finite number (%s) with 400', async (_name, json) => {
    const { key } = await setUpProject(app);
    expectError(await startRaw(key, json), 400, 'validation_failed');
  });

  it('refuses malformed JSON with 400 malformed_json', async () => {
    const { key } = await setUpProject(app);
    expectError(await startRaw(key, '{"agent_name": "a",'), 400, 'malformed_json');
    expectError(await startRaw(key, "{'agent_name': 'a'}"), 400, 'malformed_json');
  });

  it('refuses a body that is not a JSON object with 400', async () => {
    const { key } = await setUpProject(app);
    expectError(await startRaw(key, '[1,2]'), 400, 'validation_failed');
    // A bare JSON string is refused by the strict JSON parser: still a 400.
    expect((await startRaw(key, '"a"')).status).toBe(400);
  });

  it('refuses a body that is not JSON with 415', async () => {
    const { key } = await setUpProject(app);
    const text = await app.http
      .post('/ingest/agent/runs')
      .set(keyAuth(key))
      .set('Content-Type', 'text/plain')
      .send('agent_name=a');
    expectError(text, 415, 'unsupported_media_type');
    const form = await app.http.post('/ingest/agent/runs').set(keyAuth(key)).type('form').send({ agent_name: 'a' });
    expectError(form, 415, 'unsupported_media_type');
  });

  it('stores nothing for a refused start', async () => {
    const { project, key } = await setUpProject(app);
    const id = randomUUID();
    expectFieldError(await start(key, { agent_name: '', id, timestamp: at(app) }), 'agent_name');
    expect(await liveRowCount(app, project.id, id)).toBe(0);
    expectError(await getRun(app, key, project.id, id), 404, 'not_found');
  });
});

describe('idempotent retries', () => {
  it('creates one run when the same start (id + timestamp) is sent again, answering the same 201', async () => {
    const { project, key } = await setUpProject(app);
    const body = { agent_name: 'a', id: randomUUID(), timestamp: at(app, -1000), input: 'hello', metadata: [1] };
    const first = await start(key, body);
    const second = await start(key, body);
    const concurrent = await Promise.all([start(key, body), start(key, body)]);
    for (const res of [first, second, ...concurrent]) {
      expect(res.status).toBe(201);
      expect(res.body).toEqual({ id: body.id, timestamp: body.timestamp });
    }
    expect(await liveRowCount(app, project.id, body.id)).toBe(1);
    expect(await listRuns(app, key, project.id)).toMatchObject({ total: 1, ids: [body.id] });
    expect(await readRun(app, key, project.id, first.body)).toMatchObject({
      status: 'running',
      input: 'hello',
      metadata: [1],
    });
  });

  it('takes the start time of a UUIDv7 id sent without a timestamp from the id: a retry is the same run', async () => {
    const { project, key } = await setUpProject(app);
    const startedAt = new Date(app.clock.now().getTime() - 1500);
    const body = { agent_name: 'a', id: uuidv7(startedAt.getTime()) };
    const first = await start(key, body);
    app.clock.advance(2);
    const retry = await start(key, body);
    for (const res of [first, retry]) {
      expect(res.status).toBe(201);
      expect(res.body).toEqual({ id: body.id, timestamp: startedAt.toISOString() });
    }
    expect(await liveRowCount(app, project.id, body.id)).toBe(1);
    expect(await listRuns(app, key, project.id)).toMatchObject({ total: 1, ids: [body.id] });
  });

  it('refuses a UUIDv7 id alone whose time is too far ahead or too old, naming the id', async () => {
    const { project, key } = await setUpProject(app);
    const now = app.clock.now().getTime();
    for (const offsetMs of [10 * 60_000, -(app.config.runAbandonAfterSeconds * 1000 + 60_000)]) {
      const res = await start(key, { agent_name: 'a', id: uuidv7(now + offsetMs) });
      expectFieldError(res, 'id');
      expect(res.body.error.message).toContain('UUIDv7');
    }
    expect(await listRuns(app, key, project.id)).toMatchObject({ total: 0 });
  });

  it('takes the server clock for a start whose id is not a UUIDv7 and that sends no timestamp', async () => {
    const { key } = await setUpProject(app);
    const res = await start(key, { agent_name: 'a', id: randomUUID() });
    expect(res.body.timestamp).toBe(app.clock.now().toISOString());
  });

  it('a retried start does not undo the steps the run received since', async () => {
    const { project, key } = await setUpProject(app);
    const body = { agent_name: 'a', id: randomUUID(), timestamp: at(app, -1000) };
    const run = await startRun(app, key, body);
    expect((await postSteps(app, key, run, [{ index: 0, type: 'llm', tokens: 3 }])).status).toBe(200);
    expect((await start(key, body)).status).toBe(201);
    expect(await readRun(app, key, project.id, run)).toMatchObject({ total_steps: 1, total_tokens: 3 });
    expect(await liveRowCount(app, project.id, body.id)).toBe(1);
  });
});

describe('starts older than RUN_ABANDON_AFTER', () => {
  // Such a run would be abandoned the moment it starts; it is refused rather than stored only to be abandoned.
  const beyondAbandon = () => -(app.config.runAbandonAfterSeconds * 1000 + 60_000);

  it('refuses a running start that old with 400, and stores nothing', async () => {
    const { project, key } = await setUpProject(app);
    const res = await start(key, { agent_name: 'a', id: randomUUID(), timestamp: at(app, 5 * 86_400_000 * -1) });
    expectFieldError(res, 'timestamp');
    expect((await start(key, { agent_name: 'a', timestamp: at(app, beyondAbandon()) })).status).toBe(400);
    expect(await listRuns(app, key, project.id)).toMatchObject({ total: 0 });
  });

  it('accepts a start just inside RUN_ABANDON_AFTER; it reads back as running', async () => {
    const { project, key } = await setUpProject(app);
    const run = await startRun(app, key, { timestamp: at(app, -(app.config.runAbandonAfterSeconds * 1000 - 60_000)) });
    expect((await readRun(app, key, project.id, run)).status).toBe('running');
  });

  it('stores an old run reported whole through the batch endpoint, and refuses it there as a bare start', async () => {
    const { project, key } = await setUpProject(app);
    const startedAt = new Date(app.clock.now().getTime() - 5 * 86_400_000);
    const timestamp = startedAt.toISOString();
    const finishedAt = new Date(startedAt.getTime() + 1500).toISOString();
    const res = await app.http
      .post('/ingest/agent/runs/batch')
      .set(keyAuth(key))
      .send({
        runs: [
          { agent_name: 'a', timestamp },
          { agent_name: 'a', timestamp, finished_at: finishedAt, status: 'completed' },
        ],
      });
    expect(res.status).toBe(200);
    expect(res.body.results[0].error.code).toBe('validation_failed');
    expect(await readRun(app, key, project.id, res.body.results[1])).toMatchObject({
      status: 'completed',
      duration_ms: 1500,
    });
  });
});
