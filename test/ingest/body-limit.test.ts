// The ingest body limit (INGEST_BODY_LIMIT_BYTES, contract §1): over it → 413 payload_too_large, nothing stored.
import { randomUUID } from 'node:crypto';
import { startTestApp, type TestApp } from '../support/app';
import { setUpProject } from '../support/fixtures';
import {
  at,
  expectError,
  getSteps,
  keyAuth,
  liveRowCount,
  postBatch,
  postFinish,
  postSteps,
  readRun,
  startRun,
  TEST_ENV,
} from './run-helpers';

const LIMIT = 64 * 1024;

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ ...TEST_ENV, INGEST_BODY_LIMIT_BYTES: String(LIMIT) });
});
afterAll(() => app.close());

/** A start body of exactly `size` bytes. */
const startOfSize = (size: number) => {
  const shell = JSON.stringify({ agent_name: 'a', input: '' });
  return JSON.stringify({ agent_name: 'a', input: 'x'.repeat(size - shell.length) });
};

it('refuses a start over the limit with 413, and stores nothing', async () => {
  const { project, key } = await setUpProject(app);
  const id = randomUUID();
  const res = await app.http
    .post('/ingest/agent/runs')
    .set(keyAuth(key))
    .send({ agent_name: 'a', id, timestamp: at(app), input: 'x'.repeat(LIMIT) });
  expectError(res, 413, 'payload_too_large');
  expect(await liveRowCount(app, project.id, id)).toBe(0);
});

it('a start of exactly the limit is read; one byte over is 413', async () => {
  const { key } = await setUpProject(app);
  const send = (json: string) =>
    app.http.post('/ingest/agent/runs').set(keyAuth(key)).set('Content-Type', 'application/json').send(json);
  expect((await send(startOfSize(LIMIT))).status).toBe(201);
  expectError(await send(startOfSize(LIMIT + 1)), 413, 'payload_too_large');
});

it('refuses steps, finish and batch bodies over the limit with 413; the run is unchanged', async () => {
  const { project, key } = await setUpProject(app);
  const run = await startRun(app, key);
  const big = 'y'.repeat(LIMIT);
  expectError(await postSteps(app, key, run, [{ index: 0, type: 'llm', output: big }]), 413, 'payload_too_large');
  expectError(await postFinish(app, key, run, { output: big }), 413, 'payload_too_large');
  expectError(await postBatch(app, key, [{ agent_name: 'a', input: big }]), 413, 'payload_too_large');
  expect(await readRun(app, key, project.id, run)).toMatchObject({ status: 'running', total_steps: 0 });
  expect((await getSteps(app, key, project.id, run.id, run.timestamp)).body).toEqual([]);
});
