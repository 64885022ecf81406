// The per-name score report (contract §10) through the real HTTP server: a window and the one before it, over the
// latest score of each (run, name, source); means, the exact median, categorical counts; the agent filter.
import { randomUUID } from 'node:crypto';
import { startTestApp, type TestApp } from '../support/app';
import { bearer, setUpProject } from '../support/fixtures';
import { expectError, keyAuth, postBatch, TEST_ENV } from '../ingest/run-helpers';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp(TEST_ENV);
});
afterAll(() => app.close());

const HOUR = 3_600_000;
const iso = (ms: number) => new Date(ms).toISOString();

/** A project with whole runs `hoursAgo` before the clock, each with its scores; returns what reads the report. */
async function scoredProject(runs: { hoursAgo: number; agent?: string; scores: unknown[] }[]) {
  const setup = await setUpProject(app);
  const now = app.clock.now().getTime();
  const items = runs.map((run) => ({
    id: randomUUID(),
    agent_name: run.agent ?? 'helper',
    timestamp: iso(now - run.hoursAgo * HOUR),
    finished_at: iso(now - run.hoursAgo * HOUR + 1000),
    status: 'completed',
    scores: run.scores,
  }));
  const res = await postBatch(app, setup.key, items);
  expect(res.body.results.every((result: object) => 'id' in result)).toBe(true);
  const report = async (query: Record<string, string> = {}) => {
    const answer = await app.http
      .get(`/projects/${setup.project.id}/agent/scores`)
      .query({ from: iso(now - 24 * HOUR), to: iso(now), ...query })
      .set(keyAuth(setup.key));
    expect(answer.status).toBe(200);
    return answer.body as Record<string, unknown>[];
  };
  return { ...setup, items, report };
}

describe('the report', () => {
  it('one entry per name by name: counts, means, exact median, categorical counts, the previous window', async () => {
    const { report } = await scoredProject([
      {
        hoursAgo: 1,
        scores: [
          { name: 'quality', value: 0.1 },
          { name: 'ok', value: true },
          { name: 'tag', value: 'x' },
        ],
      },
      {
        hoursAgo: 2,
        scores: [
          { name: 'quality', value: 0.4 },
          { name: 'ok', value: false },
          { name: 'tag', value: 'y' },
        ],
      },
      {
        hoursAgo: 3,
        scores: [
          { name: 'quality', value: 0.9 },
          { name: 'ok', value: true },
          { name: 'tag', value: 'x' },
        ],
      },
      { hoursAgo: 4, scores: [{ name: 'quality', value: 1 }] },
      // The previous window: [now − 48 h, now − 24 h).
      {
        hoursAgo: 30,
        scores: [
          { name: 'quality', value: 0.3 },
          { name: 'ok', value: false },
        ],
      },
      {
        hoursAgo: 40,
        scores: [
          { name: 'quality', value: 0.5 },
          { name: 'old_only', value: 1 },
        ],
      },
    ]);
    expect(await report()).toEqual([
      { name: 'ok', data_type: 'boolean', count: 3, prev_count: 1, mean: 2 / 3, prev_mean: 0, p50: null, values: null },
      {
        name: 'quality',
        data_type: 'numeric',
        count: 4,
        prev_count: 2,
        mean: 0.6,
        prev_mean: 0.4,
        // Linear interpolation between the closest ranks, as every percentile of the service (§5).
        p50: 0.65,
        values: null,
      },
      {
        name: 'tag',
        data_type: 'categorical',
        count: 3,
        prev_count: 0,
        mean: null,
        prev_mean: null,
        p50: null,
        values: { x: 2, y: 1 },
      },
    ]);
  });

  it('counts the latest score of each (run, name, source): an older one of the pair is not counted', async () => {
    const { key, items, report } = await scoredProject([
      { hoursAgo: 1, scores: [{ name: 'quality', value: 0.2, source: 'eval' }] },
    ]);
    const [run] = items;
    const post = (scores: unknown[]) =>
      app.http.post(`/ingest/agent/runs/${run.id}/scores`).set(keyAuth(key)).send({ timestamp: run.timestamp, scores });
    app.clock.advance(1);
    // The evaluator again (the latest of its pair wins), and a human, another source: both count.
    expect((await post([{ name: 'quality', value: 0.6, source: 'eval' }])).status).toBe(200);
    expect((await post([{ name: 'quality', value: 1, source: 'human' }])).status).toBe(200);
    const [entry] = await report({ to: app.clock.now().toISOString() });
    expect(entry).toMatchObject({ name: 'quality', count: 2, mean: 0.8, p50: 0.8 });
  });

  it('takes an agent_name filter; a window with no scores is an empty array; the window is checked', async () => {
    const { key, project, report } = await scoredProject([
      { hoursAgo: 1, agent: 'planner', scores: [{ name: 'quality', value: 1 }] },
      {
        hoursAgo: 2,
        agent: 'writer',
        scores: [
          { name: 'quality', value: 0 },
          { name: 'style', value: 'terse' },
        ],
      },
    ]);
    expect(await report({ agent_name: 'planner' })).toEqual([
      expect.objectContaining({ name: 'quality', count: 1, mean: 1 }),
    ]);
    expect(await report({ agent_name: 'nobody' })).toEqual([]);
    const now = app.clock.now().getTime();
    const refused = await app.http
      .get(`/projects/${project.id}/agent/scores`)
      .query({ from: iso(now), to: iso(now - HOUR) })
      .set(keyAuth(key));
    expectError(refused, 400, 'invalid_window');
  });

  it('members read it with their session; a key of another project gets 403', async () => {
    const { admin, project } = await scoredProject([{ hoursAgo: 1, scores: [{ name: 'quality', value: 1 }] }]);
    const res = await app.http.get(`/projects/${project.id}/agent/scores`).set(bearer(admin.token));
    expect(res.status).toBe(200);
    const other = await setUpProject(app);
    expectError(await app.http.get(`/projects/${project.id}/agent/scores`).set(keyAuth(other.key)), 403, 'forbidden');
  });
});
