// Reading one run and its steps back: GET /projects/{p}/agent/runs/{id}[?timestamp=] and …/steps?timestamp=.
import { randomUUID } from 'node:crypto';
import { startTestApp, type TestApp } from '../support/app';
import { addMember, bearer, registerUser, setUpProject } from '../support/fixtures';
import {
  at,
  expectError,
  expectFieldError,
  getRun,
  getSteps,
  keyAuth,
  llm,
  postBatch,
  postFinish,
  postSteps,
  startRun,
  TEST_ENV,
  tool,
  withMicroseconds,
  withOffset,
} from '../ingest/run-helpers';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp(TEST_ENV);
});
afterAll(() => app.close());

const runPath = (projectId: string, id: string) => `/projects/${projectId}/agent/runs/${id}`;

describe('GET run', () => {
  it('reads a running run with and without ?timestamp, identically', async () => {
    const { project, key } = await setUpProject(app);
    const run = await startRun(app, key, { agent_name: 'reader', input: 'hi', metadata: [0.5] });
    const withTimestamp = await getRun(app, key, project.id, run.id, run.timestamp);
    const without = await getRun(app, key, project.id, run.id);
    expect(withTimestamp.status).toBe(200);
    expect(without.status).toBe(200);
    expect(without.body).toEqual(withTimestamp.body);
    expect(without.body).toEqual({
      id: run.id,
      project_id: project.id,
      agent_name: 'reader',
      status: 'running',
      timestamp: run.timestamp,
      finished_at: null,
      duration_ms: null,
      input: 'hi',
      output: '',
      loop_detected: false,
      loop_step_index: null,
      termination_reason: null,
      termination_detail: null,
      total_steps: 0,
      total_tokens: 0,
      total_cost_usd: 0,
      metadata: [0.5],
      session_id: null,
      user_id: null,
      tags: [],
    });
  });

  it('reads a run in its latest state: after steps, then after finish', async () => {
    const { project, key } = await setUpProject(app);
    const run = await startRun(app, key);
    await postSteps(app, key, run, [llm(0, 'a', { tokens: 4 })]);
    for (const timestamp of [run.timestamp, undefined]) {
      expect((await getRun(app, key, project.id, run.id, timestamp)).body).toMatchObject({
        status: 'running',
        total_steps: 1,
        total_tokens: 4,
      });
    }
    const finished = (await postFinish(app, key, run, { status: 'cancelled' })).body;
    for (const timestamp of [run.timestamp, undefined]) {
      expect((await getRun(app, key, project.id, run.id, timestamp)).body).toEqual(finished);
    }
  });

  it('matches ?timestamp as an instant to the ms (microseconds, offsets), and the id case-insensitively', async () => {
    const { project, key } = await setUpProject(app);
    const run = await startRun(app, key, { timestamp: at(app, -7000) });
    for (const timestamp of [
      withMicroseconds(run.timestamp),
      withOffset(run.timestamp, 4),
      withOffset(run.timestamp, -11),
    ]) {
      expect((await getRun(app, key, project.id, run.id.toUpperCase(), timestamp)).body.id).toBe(run.id);
    }
  });

  it("takes the project id in any case, with the project's key and with a member's session", async () => {
    const { project, key, admin } = await setUpProject(app);
    const run = await startRun(app, key, { timestamp: at(app, -7000) });
    const upper = project.id.toUpperCase();
    expect((await getRun(app, key, upper, run.id, run.timestamp)).body.id).toBe(run.id);
    const bySession = await app.http
      .get(runPath(upper, run.id))
      .query({ timestamp: run.timestamp })
      .set(bearer(admin.token));
    expect([bySession.status, bySession.body.id]).toEqual([200, run.id]);
    const list = await app.http.get(`/projects/${upper}/agent/runs`).set(keyAuth(key));
    expect([list.status, list.headers['x-total-count']]).toEqual([200, '1']);
  });

  it('answers 404 for an unknown run, and for a known run with another timestamp', async () => {
    const { project, key } = await setUpProject(app);
    const run = await startRun(app, key, { timestamp: at(app, -7000) });
    expectError(await getRun(app, key, project.id, randomUUID()), 404, 'not_found');
    expectError(await getRun(app, key, project.id, randomUUID(), run.timestamp), 404, 'not_found');
    expectError(await getRun(app, key, project.id, run.id, at(app, -6999)), 404, 'not_found');
  });

  it('answers 400 invalid_id for a runID or projectID that is not a UUID', async () => {
    const { project, key } = await setUpProject(app);
    expectError(await app.http.get(runPath(project.id, 'abc')).set(keyAuth(key)), 400, 'invalid_id');
    expectError(await app.http.get(runPath('abc', randomUUID())).set(keyAuth(key)), 400, 'invalid_id');
    expectError(
      await app.http
        .get(`${runPath(project.id, 'abc')}/steps`)
        .query({ timestamp: at(app) })
        .set(keyAuth(key)),
      400,
      'invalid_id',
    );
  });

  it('answers 400 for a ?timestamp that is not RFC 3339 with an offset, and for unknown query parameters', async () => {
    const { project, key } = await setUpProject(app);
    const run = await startRun(app, key);
    expectFieldError(await getRun(app, key, project.id, run.id, '2026-01-01 00:00:00'), 'timestamp');
    expectFieldError(await getRun(app, key, project.id, run.id, 'yesterday'), 'timestamp');
    expectError(
      await app.http.get(runPath(project.id, run.id)).query({ ts: run.timestamp }).set(keyAuth(key)),
      400,
      'validation_failed',
    );
  });
});

describe('GET steps', () => {
  it('lists the steps by index with every field; [] for a run without steps', async () => {
    const { project, key } = await setUpProject(app);
    const run = await startRun(app, key);
    expect((await getSteps(app, key, project.id, run.id, run.timestamp)).body).toEqual([]);
    await postSteps(app, key, run, [
      tool(2, 'grep', 'x', 'y'),
      llm(0, 'first'),
      llm(1, 'second', { model: 'm', tokens: 9, cost_usd: 0.01 }),
    ]);
    const steps = await getSteps(app, key, project.id, run.id, run.timestamp);
    expect(steps.status).toBe(200);
    expect(steps.body).toEqual([
      {
        index: 0,
        type: 'llm',
        name: null,
        tool_name: null,
        model: null,
        input: '',
        output: 'first',
        tokens: null,
        input_tokens: null,
        output_tokens: null,
        cost_usd: null,
        started_at: null,
        duration_ms: null,
        error: null,
      },
      {
        index: 1,
        type: 'llm',
        name: null,
        tool_name: null,
        model: 'm',
        input: '',
        output: 'second',
        tokens: 9,
        input_tokens: null,
        output_tokens: null,
        cost_usd: 0.01,
        started_at: null,
        duration_ms: null,
        error: null,
      },
      {
        index: 2,
        type: 'tool',
        name: null,
        tool_name: 'grep',
        model: null,
        input: 'x',
        output: 'y',
        tokens: null,
        input_tokens: null,
        output_tokens: null,
        cost_usd: null,
        started_at: null,
        duration_ms: null,
        error: null,
      },
    ]);
  });

  it('reads the steps of a finished run and of a whole run from a batch', async () => {
    const { project, key } = await setUpProject(app);
    const run = await startRun(app, key);
    await postFinish(app, key, run, { steps: [llm(0, 'only')] });
    expect((await getSteps(app, key, project.id, run.id, run.timestamp)).body).toMatchObject([
      { index: 0, output: 'only' },
    ]);
    const [whole] = (
      await postBatch(app, key, [{ agent_name: 'a', status: 'completed', steps: [llm(0, 'x'), llm(1, 'y')] }])
    ).body.results;
    expect((await getSteps(app, key, project.id, whole.id, whole.timestamp)).body).toHaveLength(2);
  });

  it('requires ?timestamp (400) and answers 404 for an unknown run or a wrong timestamp', async () => {
    const { project, key } = await setUpProject(app);
    const run = await startRun(app, key, { timestamp: at(app, -9000) });
    // A missing timestamp is said to be missing; a malformed one, malformed.
    const missing = expectFieldError(
      await app.http.get(`${runPath(project.id, run.id)}/steps`).set(keyAuth(key)),
      'timestamp',
    );
    expect(missing.details).toEqual([{ path: 'timestamp', message: 'is required' }]);
    const malformed = expectFieldError(await getSteps(app, key, project.id, run.id, 'now'), 'timestamp');
    expect(malformed.details).toEqual([{ path: 'timestamp', message: 'must be an RFC 3339 timestamp with an offset' }]);
    expectError(await getSteps(app, key, project.id, randomUUID(), run.timestamp), 404, 'not_found');
    expectError(await getSteps(app, key, project.id, run.id, at(app, -8000)), 404, 'not_found');
    expect((await getSteps(app, key, project.id, run.id, withMicroseconds(run.timestamp))).status).toBe(200);
  });
});

describe('who may read', () => {
  async function runWithSteps() {
    const setup = await setUpProject(app);
    const run = await startRun(app, setup.key);
    await postSteps(app, setup.key, run, [llm(0, 'a')]);
    return { ...setup, run };
  }

  it("the project's own key, and a session of any member of its organization (viewer included)", async () => {
    const { admin, org, project, run } = await runWithSteps();
    const viewer = await addMember(app, admin.token, org.id, 'viewer');
    const member = await addMember(app, admin.token, org.id, 'member');
    for (const token of [admin.token, viewer.token, member.token]) {
      expect((await app.http.get(runPath(project.id, run.id)).set(bearer(token))).body.id).toBe(run.id);
      expect(
        (await app.http.get(runPath(project.id, run.id)).query({ timestamp: run.timestamp }).set(bearer(token))).status,
      ).toBe(200);
      expect(
        (
          await app.http
            .get(`${runPath(project.id, run.id)}/steps`)
            .query({ timestamp: run.timestamp })
            .set(bearer(token))
        ).body,
      ).toHaveLength(1);
    }
    // The session cookie works as well as the Bearer header.
    const viaCookie = await app.http.get(runPath(project.id, run.id)).set('Cookie', `runwatch_session=${admin.token}`);
    expect(viaCookie.status).toBe(200);
  });

  it("another project's key gets 403; its session-holder outside the organization gets 404", async () => {
    const { project, run } = await runWithSteps();
    const other = await setUpProject(app);
    expectError(await getRun(app, other.key, project.id, run.id), 403, 'forbidden');
    expectError(await getSteps(app, other.key, project.id, run.id, run.timestamp), 403, 'forbidden');
    const outsider = await registerUser(app);
    expectError(await app.http.get(runPath(project.id, run.id)).set(bearer(outsider.token)), 404, 'not_found');
    expectError(
      await app.http
        .get(`${runPath(project.id, run.id)}/steps`)
        .query({ timestamp: run.timestamp })
        .set(bearer(outsider.token)),
      404,
      'not_found',
    );
    expectError(await app.http.get(runPath(project.id, run.id)).set(bearer(other.admin.token)), 404, 'not_found');
  });

  it('a key of another project of the organization gets 403; read under that project, the run is 404', async () => {
    const { admin, org, project, run } = await runWithSteps();
    const sibling = (
      await app.http
        .post(`/admin/orgs/${org.id}/projects`)
        .set(bearer(admin.token))
        .send({ name: `sibling-${randomUUID()}` })
    ).body;
    const siblingKey = (
      await app.http.post(`/admin/orgs/${org.id}/projects/${sibling.id}/api-keys`).set(bearer(admin.token)).send({})
    ).body.key;
    expectError(await getRun(app, siblingKey, project.id, run.id), 403, 'forbidden');
    expectError(await getRun(app, siblingKey, sibling.id, run.id), 404, 'not_found');
    expectError(await app.http.get(runPath(sibling.id, run.id)).set(bearer(admin.token)), 404, 'not_found');
  });

  it('no credentials, a wrong key, a revoked key or a logged-out session get 401', async () => {
    const { admin, org, project, apiKey, key, run } = await runWithSteps();
    expectError(await app.http.get(runPath(project.id, run.id)), 401, 'unauthenticated');
    expectError(await getRun(app, `rw_${'z'.repeat(40)}`, project.id, run.id), 401, 'unauthenticated');
    await app.http
      .delete(`/admin/orgs/${org.id}/projects/${project.id}/api-keys/${apiKey.id}`)
      .set(bearer(admin.token))
      .expect(204);
    expectError(await getRun(app, key, project.id, run.id), 401, 'unauthenticated');
    expectError(await getSteps(app, key, project.id, run.id, run.timestamp), 401, 'unauthenticated');
    await app.http.post('/auth/logout').set(bearer(admin.token)).expect(204);
    expectError(await app.http.get(runPath(project.id, run.id)).set(bearer(admin.token)), 401, 'unauthenticated');
  });

  it("a project that does not exist: 404 for a session, 403 for a key (it is not the key's project)", async () => {
    const { admin, key } = await setUpProject(app);
    const missing = randomUUID();
    expectError(await app.http.get(runPath(missing, randomUUID())).set(bearer(admin.token)), 404, 'not_found');
    expectError(await getRun(app, key, missing, randomUUID()), 403, 'forbidden');
  });
});
