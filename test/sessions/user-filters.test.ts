// Cost and activity per user and per session (contract §10), through the real HTTP server: the runs list's
// session_id and user_id filters, and the user_id filter of the summary, health and time series, over windows read
// from the hourly rollups (without the filter) and from raw rows (with it).
import { randomInt, randomUUID } from 'node:crypto';
import { startTestApp, type TestApp } from '../support/app';
import { setUpProject } from '../support/fixtures';
import { keyAuth, postBatch, startRun, TEST_ENV } from '../ingest/run-helpers';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp(TEST_ENV);
});
afterAll(() => app.close());

const HOUR = 3_600_000;
const iso = (ms: number) => new Date(ms).toISOString();

/** Whole runs of three users over the last 30 hours, in sessions, and one running run of alice's. */
async function usersProject() {
  const setup = await setUpProject(app);
  const now = app.clock.now().getTime();
  const items = Array.from({ length: 90 }, (_, i) => {
    const start = now - randomInt(30 * HOUR);
    return {
      id: randomUUID(),
      agent_name: i % 2 === 0 ? 'planner' : 'writer',
      timestamp: iso(start),
      finished_at: iso(start + 1000 + randomInt(60_000)),
      status: i % 5 === 0 ? 'failed' : 'completed',
      user_id: ['alice', 'bob', 'carol'][i % 3],
      session_id: `s-${i % 7}`,
      total_cost_usd: randomInt(100) / 100,
      total_tokens: randomInt(1000),
    };
  });
  expect((await postBatch(app, setup.key, items)).status).toBe(200);
  await startRun(app, setup.key, { agent_name: 'planner', user_id: 'alice', session_id: 's-live' });
  app.clock.advance(1);
  const get = (report: string, query: Record<string, string | number>) =>
    app.http
      .get(`/projects/${setup.project.id}/agent/${report}`)
      .query({ from: iso(now - 24 * HOUR), to: iso(now + 1000), ...query })
      .set(keyAuth(setup.key));
  const window = (item: { timestamp: string }) => Date.parse(item.timestamp) >= now - 24 * HOUR;
  return { ...setup, items: items.filter(window), get };
}

describe('the runs list', () => {
  it('filters by session_id and by user_id, and counts the matches', async () => {
    const { items, get } = await usersProject();
    const bySession = await get('runs', { session_id: 's-3', limit: 1000 });
    const expected = items.filter((item) => item.session_id === 's-3').map((item) => item.id);
    expect(bySession.body.map((run: { id: string }) => run.id).sort()).toEqual(expected.sort());
    expect(bySession.headers['x-total-count']).toBe(String(expected.length));
    const byUser = await get('runs', { user_id: 'alice', limit: 1000 });
    const alices = items.filter((item) => item.user_id === 'alice');
    // Alice's running run too.
    expect(byUser.headers['x-total-count']).toBe(String(alices.length + 1));
    expect(byUser.body.every((run: { user_id: string }) => run.user_id === 'alice')).toBe(true);
    const both = await get('runs', { user_id: 'alice', session_id: 's-live' });
    expect(both.body.map((run: { status: string }) => run.status)).toEqual(['running']);
  });
});

describe('summary, health and time series of one user', () => {
  it("count that user's runs only, over a window of whole hours (read raw) as without the filter", async () => {
    const { items, get } = await usersProject();
    const bob = items.filter((item) => item.user_id === 'bob');
    const summary = (await get('summary', { user_id: 'bob' })).body.current;
    expect(summary).toMatchObject({
      total_runs: bob.length,
      completed_runs: bob.filter((item) => item.status === 'completed').length,
      avg_cost_usd: expect.closeTo(bob.reduce((sum, item) => sum + item.total_cost_usd, 0) / bob.length, 9),
      unique_agents: new Set(bob.map((item) => item.agent_name)).size,
    });
    const everyone = (await get('summary', {})).body.current;
    expect(everyone.total_runs).toBe(items.length + 1);

    const health = (await get('health', { user_id: 'bob' })).body as { agent_name: string; total_runs: number }[];
    expect(Object.fromEntries(health.map((entry) => [entry.agent_name, entry.total_runs]))).toEqual({
      planner: bob.filter((item) => item.agent_name === 'planner').length,
      writer: bob.filter((item) => item.agent_name === 'writer').length,
    });

    const series = (await get('timeseries', { user_id: 'bob', bucket: 'hour' })).body;
    expect(series.buckets.reduce((sum: number, bucket: { total_runs: number }) => sum + bucket.total_runs, 0)).toBe(
      bob.length,
    );
    const running = (await get('summary', { user_id: 'alice' })).body.current;
    expect(running.total_runs).toBe(items.filter((item) => item.user_id === 'alice').length + 1);
  });
});
