// Ingest authentication (contract §3, §4): only a live API key of the run's project may write.
import { randomUUID } from 'node:crypto';
import { startTestApp, type TestApp } from '../support/app';
import { bearer, createApiKey, setUpProject } from '../support/fixtures';
import {
  at,
  expectError,
  getRun,
  getSteps,
  keyAuth,
  postFinish,
  postSteps,
  readRun,
  startRun,
  TEST_ENV,
  type Started,
} from './run-helpers';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp(TEST_ENV);
});
afterAll(() => app.close());

/** One request of each ingest endpoint, against a run that exists, with the given headers. */
function everyEndpoint(run: Started) {
  return [
    { name: 'start', path: '/ingest/agent/runs', body: { agent_name: 'a' } },
    { name: 'batch', path: '/ingest/agent/runs/batch', body: { runs: [{ agent_name: 'a' }] } },
    {
      name: 'steps',
      path: `/ingest/agent/runs/${run.id}/steps`,
      body: { timestamp: run.timestamp, steps: [{ index: 0, type: 'llm' }] },
    },
    {
      name: 'finish',
      path: `/ingest/agent/runs/${run.id}/finish`,
      body: { timestamp: run.timestamp, status: 'completed' },
    },
  ];
}

async function expectEveryEndpointRefused(run: Started, headers: Record<string, string>) {
  for (const endpoint of everyEndpoint(run)) {
    const res = await app.http.post(endpoint.path).set(headers).send(endpoint.body);
    expectError(res, 401, 'unauthenticated');
  }
}

it('refuses every ingest call without a key with 401', async () => {
  const { key } = await setUpProject(app);
  await expectEveryEndpointRefused(await startRun(app, key), {});
});

it('refuses a wrong key, a malformed key and a non-Bearer scheme with 401', async () => {
  const { key } = await setUpProject(app);
  const run = await startRun(app, key);
  const wrong = `rw_${'A'.repeat(40)}`;
  await expectEveryEndpointRefused(run, keyAuth(wrong));
  await expectEveryEndpointRefused(run, keyAuth(`${key}x`));
  await expectEveryEndpointRefused(run, keyAuth(key.slice(3)));
  await expectEveryEndpointRefused(run, { Authorization: `Basic ${Buffer.from(`${key}:`).toString('base64')}` });
  await expectEveryEndpointRefused(run, { Authorization: key });
});

it('refuses a session token instead of an API key with 401', async () => {
  const { admin, key } = await setUpProject(app);
  await expectEveryEndpointRefused(await startRun(app, key), bearer(admin.token));
  // Nor does the session cookie stand in for a key.
  await expectEveryEndpointRefused(await startRun(app, key), { Cookie: `runwatch_session=${admin.token}` });
});

it("refuses a key revoked through the API with 401 at once, while the project's other key keeps working", async () => {
  const { admin, org, project, apiKey, key } = await setUpProject(app);
  const other = await createApiKey(app, admin.token, org.id, project.id);
  const run = await startRun(app, key);
  expect((await postSteps(app, key, run, [{ index: 0, type: 'llm' }])).status).toBe(200);

  await app.http
    .delete(`/admin/orgs/${org.id}/projects/${project.id}/api-keys/${apiKey.id}`)
    .set(bearer(admin.token))
    .expect(204);
  await expectEveryEndpointRefused(run, keyAuth(key));
  expectError(await getRun(app, key, project.id, run.id), 401, 'unauthenticated');

  expect((await postSteps(app, other.key, run, [{ index: 1, type: 'llm' }])).status).toBe(200);
  expect((await postFinish(app, other.key, run)).status).toBe(200);
  expect(await readRun(app, other.key, project.id, run)).toMatchObject({ status: 'completed', total_steps: 2 });
});

it("writes into the key's project only: another project's key gets 404 on steps and finish, 403 on reads", async () => {
  const mine = await setUpProject(app);
  const theirs = await setUpProject(app);
  const run = await startRun(app, mine.key, { id: randomUUID(), timestamp: at(app, -1000) });

  expectError(await postSteps(app, theirs.key, run, [{ index: 0, type: 'llm' }]), 404, 'not_found');
  expectError(await postFinish(app, theirs.key, run), 404, 'not_found');
  expectError(await getRun(app, theirs.key, mine.project.id, run.id), 403, 'forbidden');
  expectError(await getRun(app, theirs.key, mine.project.id, run.id, run.timestamp), 403, 'forbidden');
  expectError(await getSteps(app, theirs.key, mine.project.id, run.id, run.timestamp), 403, 'forbidden');
  // Under their own project the run does not exist.
  expectError(await getRun(app, theirs.key, theirs.project.id, run.id), 404, 'not_found');

  // Nothing they sent reached the run.
  expect(await readRun(app, mine.key, mine.project.id, run)).toMatchObject({ status: 'running', total_steps: 0 });
  expect((await getSteps(app, mine.key, mine.project.id, run.id, run.timestamp)).body).toEqual([]);
});

it('a start with the same id under another project is another run', async () => {
  const mine = await setUpProject(app);
  const theirs = await setUpProject(app);
  const body = { id: randomUUID(), timestamp: at(app, -1000) };
  const run = await startRun(app, mine.key, { ...body, agent_name: 'mine' });
  await startRun(app, theirs.key, { ...body, agent_name: 'theirs' });
  expect(await readRun(app, mine.key, mine.project.id, run)).toMatchObject({
    agent_name: 'mine',
    project_id: mine.project.id,
  });
  expect(await readRun(app, theirs.key, theirs.project.id, run)).toMatchObject({
    agent_name: 'theirs',
    project_id: theirs.project.id,
  });
});

it('echoes X-Request-Id on ingest responses, errors included', async () => {
  const { key } = await setUpProject(app);
  const ok = await app.http
    .post('/ingest/agent/runs')
    .set(keyAuth(key))
    .set('X-Request-Id', 'ingest-req-1')
    .send({ agent_name: 'a' });
  expect(ok.status).toBe(201);
  expect(ok.headers['x-request-id']).toBe('ingest-req-1');
  const refused = await app.http
    .post('/ingest/agent/runs')
    .set('X-Request-Id', 'ingest-req-2')
    .send({ agent_name: 'a' });
  expectError(refused, 401, 'unauthenticated');
  expect(refused.body.error.request_id).toBe('ingest-req-2');
});
