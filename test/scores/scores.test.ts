// Scores (contract §10) through the real HTTP server: the ingest endpoint (API key), the reviewer's endpoint (a
// member's session), a run's scores, batch items' scores, a name's data type per project, and idempotent re-sends.
import { randomUUID } from 'node:crypto';
import { anotherService, startTestApp, type TestApp } from '../support/app';
import { bearer, createApiKey, createProject, setUpProject, setUpTeam } from '../support/fixtures';
import {
  at,
  expectError,
  expectFieldError,
  keyAuth,
  postBatch,
  startRun,
  TEST_ENV,
  type Started,
} from '../ingest/run-helpers';
import { TIMESTAMP, UNKNOWN } from '../support/assertions';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp(TEST_ENV);
});
afterAll(() => app.close());

const postScores = (target: TestApp, key: string, run: Started, scores: unknown[]) =>
  target.http.post(`/ingest/agent/runs/${run.id}/scores`).set(keyAuth(key)).send({ timestamp: run.timestamp, scores });
const review = (token: string, projectId: string, run: Started, scores: unknown[]) =>
  app.http
    .post(`/projects/${projectId}/agent/runs/${run.id}/scores`)
    .query({ timestamp: run.timestamp })
    .set(bearer(token))
    .send({ scores });
const readScores = async (key: string, projectId: string, run: Started) => {
  const res = await app.http
    .get(`/projects/${projectId}/agent/runs/${run.id}/scores`)
    .query({ timestamp: run.timestamp })
    .set(keyAuth(key));
  expect(res.status).toBe(200);
  return res.body as Record<string, unknown>[];
};

describe('the ingest endpoint', () => {
  it('records numeric, boolean and categorical scores; the run reads them back oldest first', async () => {
    const { project, key } = await setUpProject(app);
    const run = await startRun(app, key);
    const res = await postScores(app, key, run, [
      { name: 'helpfulness', value: 0.75, comment: 'good enough' },
      { name: 'thumbs_up', value: false, source: 'user' },
      { name: 'topic', value: 'billing', source: 'eval' },
    ]);
    expect(res.status).toBe(200);
    expect(res.body.scores).toEqual([
      expect.objectContaining({ name: 'helpfulness', data_type: 'numeric', value: 0.75, source: 'api' }),
      expect.objectContaining({ name: 'thumbs_up', data_type: 'boolean', value: false, source: 'user' }),
      expect.objectContaining({ name: 'topic', data_type: 'categorical', value: 'billing', comment: null }),
    ]);
    for (const score of res.body.scores) {
      expect(score).toMatchObject({ run_id: run.id, created_at: expect.stringMatching(TIMESTAMP) });
      expect(Object.keys(score).sort()).toEqual(
        ['comment', 'created_at', 'data_type', 'id', 'name', 'run_id', 'source', 'value'].sort(),
      );
    }
    app.clock.advance(1);
    await postScores(app, key, run, [{ name: 'helpfulness', value: 0.5 }]);
    const read = await readScores(key, project.id, run);
    expect(read.map((score) => [score.name, score.value])).toEqual([
      ...res.body.scores.map((score: Record<string, unknown>) => [score.name, score.value]),
      ['helpfulness', 0.5],
    ]);
    expect(read[0].comment).toBe('good enough');
  });

  it('an unknown run → 404, for recording and for reading', async () => {
    const { project, key } = await setUpProject(app);
    const ghost = { id: randomUUID(), timestamp: at(app, -1000) };
    expectError(await postScores(app, key, ghost, [{ name: 'x', value: 1 }]), 404, 'not_found');
    const read = await app.http
      .get(`/projects/${project.id}/agent/runs/${ghost.id}/scores`)
      .query({ timestamp: ghost.timestamp })
      .set(keyAuth(key));
    expectError(read, 404, 'not_found');
    // The right id at another start time is another run.
    const run = await startRun(app, key);
    const elsewhere = { id: run.id, timestamp: at(app, -5000) };
    expectError(await postScores(app, key, elsewhere, [{ name: 'x', value: 1 }]), 404, 'not_found');
  });

  it("a value of another type than its name's → 400, in its project only; nothing of the call is kept", async () => {
    const { project, org, admin, key } = await setUpProject(app);
    const run = await startRun(app, key);
    expect((await postScores(app, key, run, [{ name: 'quality', value: 0.9 }])).status).toBe(200);
    const refused = await postScores(app, key, run, [
      { name: 'fine', value: 1 },
      { name: 'quality', value: true },
    ]);
    expectFieldError(refused, 'scores.1.value');
    expect(refused.body.error.details[0].message).toMatch(/numeric/);
    expect((await readScores(key, project.id, run)).map((score) => score.name)).toEqual(['quality']);
    // In one call the first value of a new name decides its type.
    expectFieldError(
      await postScores(app, key, run, [
        { name: 'mood', value: 'happy' },
        { name: 'mood', value: 2 },
      ]),
      'scores.1.value',
    );
    // Another project has names of its own.
    const other = await createProject(app, admin.token, org.id);
    const otherKey = (await createApiKey(app, admin.token, org.id, other.id)).key;
    const otherRun = await startRun(app, otherKey);
    expect((await postScores(app, otherKey, otherRun, [{ name: 'quality', value: 'high' }])).status).toBe(200);
  });

  it('the type holds across instances: another one, with its own cache, refuses the other type too', async () => {
    const { key, project } = await setUpProject(app);
    const run = await startRun(app, key);
    // Another instance sees the run once this one has flushed it (contract §4).
    await app.writer.flushed(project.id);
    const directory = `${app.config.ingestLog!.directory}-second`;
    const second = anotherService(app, { ingestLog: { ...app.config.ingestLog!, directory } });
    try {
      expect((await postScores(second, key, run, [{ name: 'latency_ok', value: true }])).status).toBe(200);
      expectFieldError(await postScores(app, key, run, [{ name: 'latency_ok', value: 0.3 }]), 'scores.0.value');
    } finally {
      await second.ingest.drain();
    }
  });

  it('re-sending a score with its id replaces it; without an id every call adds', async () => {
    const { project, key } = await setUpProject(app);
    const run = await startRun(app, key);
    const id = randomUUID();
    await postScores(app, key, run, [{ id, name: 'accuracy', value: 0.2 }]);
    app.clock.advance(1);
    const again = await postScores(app, key, run, [{ id, name: 'accuracy', value: 0.8, comment: 'rechecked' }]);
    expect(again.body.scores[0]).toMatchObject({ id, value: 0.8 });
    await postScores(app, key, run, [{ name: 'accuracy', value: 0.4 }]);
    await postScores(app, key, run, [{ name: 'accuracy', value: 0.4 }]);
    const read = await readScores(key, project.id, run);
    expect(read.map((score) => score.value)).toEqual([0.8, 0.4, 0.4]);
    expect(read[0]).toMatchObject({ id, comment: 'rechecked' });
  });

  it.each([
    ['a name with capitals', { name: 'Quality', value: 1 }, 'scores.0.name'],
    ['a name of 101 characters', { name: 'x'.repeat(101), value: 1 }, 'scores.0.name'],
    ['an empty categorical value', { name: 'x', value: '' }, 'scores.0.value'],
    ['a categorical value of 101 characters', { name: 'x', value: 'v'.repeat(101) }, 'scores.0.value'],
    ['a value that is an object', { name: 'x', value: { a: 1 } }, 'scores.0.value'],
    ['an unknown source', { name: 'x', value: 1, source: 'robot' }, 'scores.0.source'],
    ['a comment of 2001 characters', { name: 'x', value: 1, comment: 'c'.repeat(2001) }, 'scores.0.comment'],
    ['an unknown field', { name: 'x', value: 1, weight: 2 }, 'scores.0.weight'],
  ])('%s → 400', async (_label, score, field) => {
    const { key } = await setUpProject(app);
    const run = await startRun(app, key);
    expectFieldError(await postScores(app, key, run, [score]), field);
  });

  it('no scores, or more than 100 in a call → 400', async () => {
    const { key } = await setUpProject(app);
    const run = await startRun(app, key);
    expectFieldError(await postScores(app, key, run, []), 'scores');
    const many = Array.from({ length: 101 }, (_, i) => ({ name: `n${i}`, value: i }));
    expectFieldError(await postScores(app, key, run, many), 'scores');
  });

  it("a key of another project cannot score this project's runs: the run is not found", async () => {
    const mine = await setUpProject(app);
    const theirs = await setUpProject(app);
    const run = await startRun(app, mine.key);
    expectError(await postScores(app, theirs.key, run, [{ name: 'x', value: 1 }]), 404, 'not_found');
  });
});

describe("the reviewer's endpoint", () => {
  it('admins and members score with source human by default; viewers get 403; keys 403; outsiders 404', async () => {
    const team = await setUpTeam(app);
    const project = await createProject(app, team.admin.token, team.admin.org.id);
    const key = (await createApiKey(app, team.admin.token, team.admin.org.id, project.id)).key;
    const run = await startRun(app, key);
    const byAdmin = await review(team.admin.token, project.id, run, [{ name: 'verdict', value: 'correct' }]);
    expect(byAdmin.status).toBe(200);
    expect(byAdmin.body.scores[0]).toMatchObject({ source: 'human', value: 'correct' });
    const byMember = await review(team.member.token, project.id, run, [
      { name: 'verdict', value: 'wrong', source: 'eval', comment: 'missed the refund' },
    ]);
    expect(byMember.body.scores[0]).toMatchObject({ source: 'eval', comment: 'missed the refund' });
    expectError(await review(team.viewer.token, project.id, run, [{ name: 'verdict', value: 'x' }]), 403, 'forbidden');
    expectError(await review(key, project.id, run, [{ name: 'verdict', value: 'x' }]), 403, 'forbidden');
    expectError(
      await review(team.outsider.token, project.id, run, [{ name: 'verdict', value: 'x' }]),
      404,
      'not_found',
    );
    // Viewers read.
    const read = await app.http
      .get(`/projects/${project.id}/agent/runs/${run.id}/scores`)
      .query({ timestamp: run.timestamp })
      .set(bearer(team.viewer.token));
    expect(read.body.map((score: { value: string }) => score.value)).toEqual(['correct', 'wrong']);
  });

  it('an unknown run → 404; a body with a timestamp → 400 (it goes in the query)', async () => {
    const { admin, project, key } = await setUpProject(app);
    const ghost = { id: UNKNOWN, timestamp: at(app, -1000) };
    expectError(await review(admin.token, project.id, ghost, [{ name: 'x', value: 1 }]), 404, 'not_found');
    const run = await startRun(app, key);
    const res = await app.http
      .post(`/projects/${project.id}/agent/runs/${run.id}/scores`)
      .query({ timestamp: run.timestamp })
      .set(bearer(admin.token))
      .send({ timestamp: run.timestamp, scores: [{ name: 'x', value: 1 }] });
    expectError(res, 400, 'validation_failed');
  });
});

describe('scores in batch items', () => {
  it('travel with a whole run and with a start; a retried batch records them once', async () => {
    const { project, key } = await setUpProject(app);
    const whole = { id: randomUUID(), timestamp: at(app, -10_000) };
    const items = [
      {
        agent_name: 'a',
        ...whole,
        status: 'completed',
        finished_at: at(app, -5000),
        scores: [
          { name: 'helpfulness', value: 0.6 },
          { name: 'resolved', value: true, source: 'eval' },
        ],
      },
      { agent_name: 'b', scores: [{ name: 'helpfulness', value: 0.1 }] },
    ];
    const first = await postBatch(app, key, items);
    expect(first.status).toBe(200);
    const started = first.body.results[1];
    expect(await postBatch(app, key, items.slice(0, 1))).toMatchObject({ status: 200 });
    expect((await readScores(key, project.id, whole)).map((score) => [score.name, score.value, score.source])).toEqual([
      ['helpfulness', 0.6, 'api'],
      ['resolved', true, 'eval'],
    ]);
    expect((await readScores(key, project.id, started)).map((score) => score.value)).toEqual([0.1]);
  });

  it('an item with a score of the wrong type fails alone: neither its run nor its scores are recorded', async () => {
    const { project, key } = await setUpProject(app);
    const run = await startRun(app, key);
    await postScores(app, key, run, [{ name: 'grade', value: 3 }]);
    const bad = { id: randomUUID(), timestamp: at(app, -1000) };
    const res = await postBatch(app, key, [
      { agent_name: 'a', ...bad, scores: [{ name: 'grade', value: 'A' }] },
      { agent_name: 'b', scores: [{ name: 'grade', value: 4 }] },
    ]);
    expect(res.body.results[0]).toEqual({
      error: { code: 'validation_failed', message: expect.stringMatching(/numeric/) },
    });
    expect(res.body.results[1]).toHaveProperty('id');
    const read = await app.http
      .get(`/projects/${project.id}/agent/runs/${bad.id}`)
      .query({ timestamp: bad.timestamp })
      .set(keyAuth(key));
    expect(read.status).toBe(404);
  });
});
