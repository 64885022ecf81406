// Who may read reports, which parameters are refused, and reports of empty and running-only windows.
import { startTestApp, type TestApp } from '../support/app';
import { addMember, bearer, registerUser, setUpProject } from '../support/fixtures';
import { DAY, MINUTE, expectedSummary } from './dataset';

let app: TestApp;
let projectId: string;
let key: string;
let adminToken: string;
let orgId: string;
// Whole seconds, fixed at load: the parameter tables below are built from it.
const now = new Date(Math.floor(Date.now() / 1000) * 1000);

const iso = (date: Date) => date.toISOString();
const PATHS = ['runs', 'summary', 'health', 'timeseries'] as const;
const pathOf = (report: (typeof PATHS)[number], project = projectId) => `/projects/${project}/agent/${report}`;

beforeAll(async () => {
  app = await startTestApp();
  app.clock.set(now);
  const setup = await setUpProject(app);
  ({ key } = setup);
  projectId = setup.project.id;
  adminToken = setup.admin.token;
  orgId = setup.org.id;
  // Two running runs of the last minutes, nothing else.
  for (const [agent, minutesAgo] of [
    ['planner', 3],
    ['coder', 20],
  ] as const) {
    await app.http
      .post('/ingest/agent/runs')
      .set(bearer(key))
      .send({ agent_name: agent, timestamp: iso(new Date(now.getTime() - minutesAgo * MINUTE)) })
      .expect(201);
  }
});
afterAll(() => app.close());

describe('access', () => {
  it.each(PATHS)('%s: the project API key reads its reports', async (report) => {
    await app.http.get(pathOf(report)).set(bearer(key)).expect(200);
  });

  it.each(PATHS)('%s: no credentials is 401', async (report) => {
    const res = await app.http.get(pathOf(report)).expect(401);
    expect(res.body.error.code).toBe('unauthenticated');
  });

  it.each(PATHS)("%s: another project's key is 403", async (report) => {
    const other = await setUpProject(app);
    const res = await app.http.get(pathOf(report)).set(bearer(other.key)).expect(403);
    expect(res.body.error).toMatchObject({ code: 'forbidden', details: [], request_id: res.headers['x-request-id'] });
  });

  it.each(PATHS)('%s: a session of any member of the organization (viewer included) reads them', async (report) => {
    const viewer = await addMember(app, adminToken, orgId, 'viewer');
    await app.http.get(pathOf(report)).set(bearer(viewer.token)).expect(200);
    await app.http.get(pathOf(report)).set(bearer(adminToken)).expect(200);
  });

  it.each(PATHS)('%s: a session of a non-member is 404, as for a project that does not exist', async (report) => {
    const stranger = await registerUser(app);
    const res = await app.http.get(pathOf(report)).set(bearer(stranger.token)).expect(404);
    expect(res.body.error.code).toBe('not_found');
    await app.http.get(pathOf(report, '6f1c1f0e-3c41-4c59-9d7e-2a3c1b9f0a11')).set(bearer(stranger.token)).expect(404);
  });

  it.each(PATHS)('%s: a project id that is not a UUID is 400 invalid_id', async (report) => {
    const res = await app.http.get(`/projects/not-a-uuid/agent/${report}`).set(bearer(key)).expect(400);
    expect(res.body.error.code).toBe('invalid_id');
  });
});

describe('parameters', () => {
  const get = (report: (typeof PATHS)[number], query: Record<string, string>) =>
    app.http.get(pathOf(report)).query(query).set(bearer(key));

  it.each(
    PATHS.flatMap(
      (report) =>
        [
          [report, { from: '2026-11-21' }],
          [report, { from: '2026-11-21T00:00:00' }],
          [report, { to: 'yesterday' }],
          [report, { to: '1763700000' }],
          [report, { unknown: '1' }],
        ] as const,
    ),
  )('%s with %j is 400 validation_failed', async (report, query) => {
    const res = await get(report, query).expect(400);
    expect(res.body.error.code).toBe('validation_failed');
    expect(res.body.error.details.length).toBeGreaterThan(0);
  });

  it.each(
    PATHS.flatMap(
      (report) =>
        [
          [report, { from: iso(now), to: iso(now) }],
          [report, { from: iso(now), to: iso(new Date(now.getTime() - 1)) }],
          [report, { from: iso(new Date(now.getTime() - 400 * DAY - 1)), to: iso(now) }],
          [report, { from: iso(new Date(now.getTime() + DAY)) }],
          [report, { to: iso(new Date(now.getTime() - 31 * DAY)) }],
          [report, { from: '1900-01-10T00:00:00Z', to: '1900-01-20T00:00:00Z' }],
          [report, { from: '2299-12-30T00:00:00Z', to: '2300-01-02T00:00:00Z' }],
        ] as const,
    ),
  )('%s with %j is 400 invalid_window', async (report, query) => {
    const res = await get(report, query).expect(400);
    expect(res.body.error.code).toBe('invalid_window');
  });

  it.each(PATHS)('%s accepts a window of exactly 400 days and offsets other than Z', async (report) => {
    await get(report, { from: iso(new Date(now.getTime() - 400 * DAY)), to: iso(now) }).expect(200);
    await get(report, { from: '2026-01-01T00:00:00+02:00', to: '2026-01-02T00:00:00.123456-05:30' }).expect(200);
  });

  it.each<Record<string, string>>([
    { limit: '0' },
    { limit: '1001' },
    { limit: '-1' },
    { limit: 'abc' },
    { limit: '2.5' },
    { offset: '-1' },
    { offset: 'x' },
    { status: 'done' },
    { loop_detected: 'yes' },
    { agent_name: '' },
  ])('runs with %j is 400 validation_failed', async (query) => {
    const res = await get('runs', query).expect(400);
    expect(res.body.error.code).toBe('validation_failed');
  });

  it('runs accepts limit 1 and 1000', async () => {
    await get('runs', { limit: '1' }).expect(200);
    await get('runs', { limit: '1000', offset: '0' }).expect(200);
  });
});

describe('windows without finished runs', () => {
  const oldWindow = () => ({
    from: iso(new Date(now.getTime() - 10 * DAY)),
    to: iso(new Date(now.getTime() - 9 * DAY)),
  });

  it('an empty window reports zeros, no agents and no runs', async () => {
    const summary = await app.http.get(pathOf('summary')).query(oldWindow()).set(bearer(key)).expect(200);
    expect(summary.body).toEqual({ current: expectedSummary([]), previous: expectedSummary([]) });
    for (const value of Object.values(summary.body.current)) expect(value).toBe(0);
    const health = await app.http.get(pathOf('health')).query(oldWindow()).set(bearer(key)).expect(200);
    expect(health.body).toEqual([]);
    const runs = await app.http.get(pathOf('runs')).query(oldWindow()).set(bearer(key)).expect(200);
    expect(runs.body).toEqual([]);
    expect(runs.headers['x-total-count']).toBe('0');
  });

  it('a window of running runs only counts them, with finished-run signals at 0', async () => {
    const summary = await app.http.get(pathOf('summary')).set(bearer(key)).expect(200);
    expect(summary.body.current).toEqual({
      total_runs: 2,
      completed_runs: 0,
      completion_rate: 0,
      loop_runs: 0,
      loop_rate: 0,
      avg_cost_usd: 0,
      avg_tokens: 0,
      duration_p50_ms: 0,
      duration_p95_ms: 0,
      duration_p99_ms: 0,
      total_steps: 0,
      total_tool_calls: 0,
      unique_agents: 2,
      unique_tools: 0,
    });
    const health = await app.http.get(pathOf('health')).set(bearer(key)).expect(200);
    expect(health.body.map((entry: { agent_name: string }) => entry.agent_name)).toEqual(['coder', 'planner']);
    expect(health.body[0]).toEqual({
      agent_name: 'coder',
      total_runs: 1,
      prev_total_runs: 0,
      completed_runs: 0,
      completion_rate: 0,
      loop_runs: 0,
      loop_rate: 0,
      avg_cost_usd: 0,
      avg_tokens: 0,
    });
    const runs = await app.http.get(pathOf('runs')).query({ status: 'running' }).set(bearer(key)).expect(200);
    expect(
      runs.body.map((run: { agent_name: string; status: string; finished_at: null }) => [
        run.agent_name,
        run.status,
        run.finished_at,
      ]),
    ).toEqual([
      ['planner', 'running', null],
      ['coder', 'running', null],
    ]);
    expect(runs.headers['x-total-count']).toBe('2');
  });
});
