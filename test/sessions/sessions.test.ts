// Sessions (contract §10) through the real HTTP server: the list (order, paging, X-Total-Count, filters) and one
// session with its runs; a session's figures are the sums of its runs of the window, whether they are read from the
// sessions projection (whole hours), raw rows (the edges, the filters) or live rows (running runs).
import { randomInt, randomUUID } from 'node:crypto';
import { SELECT_SESSION_COUNT, selectSessionFigures, selectSessionPage } from '../../src/sessions/queries';
import { hourWindowParams } from '../../src/reports/rollups';
import { startTestApp, type TestApp } from '../support/app';
import { bearer, setUpProject } from '../support/fixtures';
import { expectError, expectFieldError, keyAuth, postBatch, startRun, TEST_ENV } from '../ingest/run-helpers';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp(TEST_ENV);
});
afterAll(() => app.close());

const MINUTE = 60_000;
const HOUR = 3_600_000;
const iso = (ms: number) => new Date(ms).toISOString();

interface ApiRun {
  id: string;
  agent_name: string;
  status: string;
  timestamp: string;
  finished_at: string | null;
  loop_detected: boolean;
  total_steps: number;
  total_tokens: number;
  total_cost_usd: number;
  session_id: string | null;
  user_id: string | null;
}

/** The session list entry the contract defines, computed from the runs of the window, as the client sees them. */
function expectedSession(sessionId: string, runs: ApiRun[], now: number) {
  const mine = runs.filter((run) => run.session_id === sessionId);
  const starts = mine.map((run) => Date.parse(run.timestamp));
  const running = mine.filter((run) => run.status === 'running').length;
  const completed = mine.filter((run) => run.status === 'completed').length;
  const lastFinish = Math.max(...mine.map((run) => (run.finished_at ? Date.parse(run.finished_at) : 0)));
  const sum = (field: 'total_steps' | 'total_tokens' | 'total_cost_usd') =>
    mine.reduce((total, run) => total + run[field], 0);
  return {
    session_id: sessionId,
    user_ids: [...new Set(mine.flatMap((run) => (run.user_id ? [run.user_id] : [])))].sort(),
    agents: [...new Set(mine.map((run) => run.agent_name))].sort(),
    first_run_at: iso(Math.min(...starts)),
    last_run_at: iso(Math.max(...starts)),
    total_runs: mine.length,
    running_runs: running,
    completed_runs: completed,
    failed_runs: mine.length - running - completed,
    loop_runs: mine.filter((run) => run.loop_detected).length,
    total_steps: sum('total_steps'),
    total_tokens: sum('total_tokens'),
    total_cost_usd: expect.closeTo(sum('total_cost_usd'), 9),
    duration_ms: (running > 0 ? now : lastFinish) - Math.min(...starts),
  };
}

/** A project with `sessions` sessions of random runs over the last `hours` hours (some running), and its runs. */
async function projectWithSessions(sessions: number, hours: number) {
  const setup = await setUpProject(app);
  const now = app.clock.now().getTime();
  const items = Array.from({ length: sessions * 4 }, (_, i) => {
    const start = now - randomInt(hours * HOUR);
    const session = `s-${i % sessions}`;
    return {
      id: randomUUID(),
      agent_name: ['planner', 'writer', 'critic'][randomInt(3)],
      timestamp: iso(start),
      finished_at: iso(Math.min(now, start + randomInt(5 * MINUTE))),
      status: ['completed', 'completed', 'failed', 'cancelled'][randomInt(4)],
      session_id: session,
      user_id: `u-${i % sessions}-${randomInt(2)}`,
      steps: Array.from({ length: randomInt(4) }, (_s, index) => ({
        index,
        type: 'llm',
        tokens: randomInt(500),
        cost_usd: randomInt(1000) / 10_000,
      })),
    };
  });
  // Runs without a session, and one running run in a session.
  items.push({ ...items[0], id: randomUUID(), session_id: undefined as never });
  expect((await postBatch(app, setup.key, items)).status).toBe(200);
  await startRun(app, setup.key, { agent_name: 'planner', session_id: 's-0', user_id: 'u-live' });
  const list = (query: Record<string, string | number> = {}) =>
    app.http
      .get(`/projects/${setup.project.id}/agent/sessions`)
      .query({ from: iso(now - hours * HOUR - MINUTE), to: iso(now + MINUTE), ...query })
      .set(keyAuth(setup.key));
  const runs = async (from: number, to: number) => {
    const res = await app.http
      .get(`/projects/${setup.project.id}/agent/runs`)
      .query({ from: iso(from), to: iso(to), limit: 1000 })
      .set(keyAuth(setup.key));
    return res.body as ApiRun[];
  };
  return { ...setup, now, list, runs };
}

describe('the list', () => {
  it("a session's figures are the sums of its runs of the window, read from the projection and raw rows", async () => {
    const { now, list, runs } = await projectWithSessions(12, 30);
    const res = await list({ limit: 1000 });
    expect(res.status).toBe(200);
    const all = await runs(now - 30 * HOUR - MINUTE, now + MINUTE);
    const ids = [...new Set(all.flatMap((run) => (run.session_id ? [run.session_id] : [])))];
    expect(res.headers['x-total-count']).toBe(String(ids.length));
    const expected = ids.map((id) => expectedSession(id, all, now));
    expected.sort((a, b) => b.last_run_at.localeCompare(a.last_run_at) || (a.session_id < b.session_id ? -1 : 1));
    expect(res.body).toEqual(expected);
    expect(res.body.find((session: { session_id: string }) => session.session_id === 's-0').running_runs).toBe(1);
  });

  it('a window cuts sessions: only their runs of the window count; paging keeps the order', async () => {
    const { now, list, runs } = await projectWithSessions(8, 10);
    const from = now - 5 * HOUR - 17 * MINUTE;
    const to = now - 2 * HOUR + 3 * MINUTE;
    const inWindow = (await runs(from, to)).filter((run) => run.status !== 'running');
    const ids = [...new Set(inWindow.flatMap((run) => (run.session_id ? [run.session_id] : [])))];
    const expected = ids
      .map((id) => expectedSession(id, inWindow, now))
      .sort((a, b) => b.last_run_at.localeCompare(a.last_run_at) || (a.session_id < b.session_id ? -1 : 1));
    const first = await list({ from: iso(from), to: iso(to), limit: 3 });
    const rest = await list({ from: iso(from), to: iso(to), limit: 1000, offset: 3 });
    expect([...first.body, ...rest.body]).toEqual(expected);
    expect(first.headers['x-total-count']).toBe(String(expected.length));
    const past = await list({ from: iso(from), to: iso(to), offset: 500 });
    expect({ body: past.body, total: past.headers['x-total-count'] }).toEqual({
      body: [],
      total: String(expected.length),
    });
  });

  it('agent_name and user_id filters narrow the runs a session counts', async () => {
    const { now, list, runs } = await projectWithSessions(6, 3);
    const all = await runs(now - 3 * HOUR - MINUTE, now + MINUTE);
    for (const [filter, keep] of [
      [{ agent_name: 'writer' }, (run: ApiRun) => run.agent_name === 'writer'],
      [{ user_id: 'u-2-1' }, (run: ApiRun) => run.user_id === 'u-2-1'],
    ] as const) {
      const kept = all.filter(keep);
      const ids = [...new Set(kept.flatMap((run) => (run.session_id ? [run.session_id] : [])))];
      const res = await list({ ...filter, limit: 1000 });
      expect(res.body.map((session: { session_id: string }) => session.session_id).sort()).toEqual(ids.sort());
      for (const session of res.body) expect(session).toEqual(expectedSession(session.session_id, kept, now));
    }
  });

  // Embedded only: the plans are the same on a server, where building the projections of the shared server's month
  // (every server-mode test file's runs) took longer than a test in CI.
  (process.env.CLICKHOUSE_URL ? it.skip : it)(
    'over whole hours, the count is read from the bitmaps of session numbers and the figures by number',
    async () => {
      const { project, now } = await projectWithSessions(2, 6);
      await app.writer.flushed(project.id);
      // A flush's part gets its projections from its first merge (schema/clickhouse/0010): built here.
      const months = new Set([now - 6 * HOUR, now].map((ms) => iso(ms).slice(0, 7).replace('-', '')));
      for (const projection of ['sessions', 'session_bitmaps', 'sessions_by_number'])
        for (const month of months)
          await app.stores.ch.command(
            `ALTER TABLE runs MATERIALIZE PROJECTION ${projection} IN PARTITION ${month} SETTINGS mutations_sync = 1`,
          );
      const params = {
        ...hourWindowParams(project.id, { from: new Date(now - 6 * HOUR), to: new Date(now) }, new Date(now)),
        limit: 25,
        offset: 0,
        numbers: [1, 2],
      };
      const plan = async (sql: string) =>
        (await app.stores.ch.query<{ explain: string }>({ name: 'test.explain', sql: `EXPLAIN ${sql}`, params }))
          .map((row) => row.explain)
          .join('\n');
      // (The count's lookup of the edges' sessions by number runs as a scalar subquery, before the plan is made.)
      expect(await plan(SELECT_SESSION_COUNT)).toContain('ReadFromMergeTree (session_bitmaps)');
      expect(await plan(selectSessionFigures('rollups', ['numbers']))).toContain(
        'ReadFromMergeTree (sessions_by_number)',
      );
      // Where runs are not numbered, the page groups the window's sessions from the `sessions` projection.
      expect(await plan(selectSessionPage('rollups', []))).toContain('ReadFromMergeTree (sessions)');
    },
    // Building the projections of a month other test files wrote into takes longer on a busy machine.
    120_000,
  );

  it('runs written before sessions were numbered are counted by grouping, beside numbered ones', async () => {
    const { project, now, list, runs } = await projectWithSessions(4, 3);
    // Rows as an earlier version stored them, without a session number (what the column's default gives them): every
    // run of two sessions, and one of a third, whose other runs keep their numbers.
    await app.writer.flushed(project.id);
    await app.stores.ch.command(
      `ALTER TABLE runs UPDATE session_number = 9223372036854775808
       WHERE project_id = {project:UUID} AND (session_id IN ('s-1', 's-2') OR (session_id, timestamp) IN (
         SELECT session_id, min(timestamp) FROM runs WHERE project_id = {project:UUID} AND session_id = 's-3'
         GROUP BY session_id))
       SETTINGS mutations_sync = 1`,
      { project: project.id },
    );
    const all = await runs(now - 3 * HOUR - MINUTE, now + MINUTE);
    const ids = [...new Set(all.flatMap((run) => (run.session_id ? [run.session_id] : [])))];
    const res = await list({ limit: 1000 });
    expect(res.headers['x-total-count']).toBe(String(ids.length));
    expect(res.body.map((session: { session_id: string }) => session.session_id).sort()).toEqual(ids.sort());
    for (const session of res.body) expect(session).toEqual(expectedSession(session.session_id, all, now));
  }, 120_000); // its mutation rewrites the month's parts: slow on a busy shared test server

  it('checks its query: limit, window, unknown parameters', async () => {
    const { list } = await projectWithSessions(1, 1);
    expectFieldError(await list({ limit: 1001 }), 'limit');
    expectError(await list({ from: iso(Date.now()), to: iso(Date.now() - HOUR) }), 400, 'invalid_window');
    expectFieldError(await list({ session: 'x' }), 'session');
  });
});

describe('one session', () => {
  it('its figures and its runs of the window in start order; X-Total-Count; members read it too', async () => {
    const { admin, project, key, now, runs } = await projectWithSessions(3, 2);
    const all = await runs(now - 2 * HOUR - MINUTE, now + MINUTE);
    const res = await app.http
      .get(`/projects/${project.id}/agent/sessions/s-1`)
      .query({ from: iso(now - 2 * HOUR - MINUTE), to: iso(now + MINUTE) })
      .set(keyAuth(key));
    expect(res.status).toBe(200);
    expect(res.body.session).toEqual(expectedSession('s-1', all, now));
    const mine = all
      .filter((run) => run.session_id === 's-1')
      .sort((a, b) => a.timestamp.localeCompare(b.timestamp) || (a.id < b.id ? -1 : 1));
    expect(res.body.runs).toEqual(mine);
    expect(res.headers['x-total-count']).toBe(String(mine.length));
    const asMember = await app.http.get(`/projects/${project.id}/agent/sessions/s-1`).set(bearer(admin.token));
    expect(asMember.status).toBe(200);
  });

  it('an unknown session, or one with no run in the window → 404; ids with any character', async () => {
    const { project, key } = await setUpProject(app);
    const path = (id: string) => `/projects/${project.id}/agent/sessions/${encodeURIComponent(id)}`;
    expectError(await app.http.get(path('nope')).set(keyAuth(key)), 404, 'not_found');
    const odd = 'tenant/42 · conv#7?x=1';
    await startRun(app, key, { session_id: odd });
    // The default window ends now, before which the run must have started.
    app.clock.advance(1);
    const res = await app.http.get(path(odd)).set(keyAuth(key));
    expect(res.body.session).toMatchObject({ session_id: odd, total_runs: 1, running_runs: 1 });
    const old = await app.http
      .get(path(odd))
      .query({ from: iso(Date.now() - 3 * HOUR), to: iso(Date.now() - 2 * HOUR) })
      .set(keyAuth(key));
    expectError(old, 404, 'not_found');
    expectError(await app.http.get(path('x'.repeat(201))).set(keyAuth(key)), 400, 'invalid_id');
  });
});
