// Retention (contract §3): a project's retention_days, on create, PATCH and the list; runs past it are never
// listed or counted, in any report, the time series or the alert preview; the hourly job deletes them, and all the
// runs and steps of a deleted project.
import { randomUUID } from 'node:crypto';
import { dropEmptiedParts } from '../../src/db/emptied-parts';
import { startTestApp, type TestApp } from '../support/app';
import { expectError, expectFieldError } from '../support/assertions';
import { bearer, createApiKey, registerUser } from '../support/fixtures';
import { storedRowCount } from '../ingest/run-helpers';

let app: TestApp;
let admin: Awaited<ReturnType<typeof registerUser>>;
beforeAll(async () => {
  app = await startTestApp();
  admin = await registerUser(app);
});
afterAll(() => app.close());

const DAY_MS = 86_400_000;
const projects = () => `/admin/orgs/${admin.org.id}/projects`;

async function projectWithRuns(retentionDays?: number) {
  const created = await app.http
    .post(projects())
    .set(bearer(admin.token))
    .send({ name: `p-${randomUUID()}`, ...(retentionDays ? { retention_days: retentionDays } : {}) })
    .expect(201);
  const { key } = await createApiKey(app, admin.token, admin.org.id, created.body.id);
  // One run a day for the last ten days, each with a step.
  const now = app.clock.now().getTime();
  const runs = Array.from({ length: 10 }, (_, day) => ({
    agent_name: 'agent',
    status: 'completed',
    timestamp: new Date(now - day * DAY_MS - 60_000).toISOString(),
    finished_at: new Date(now - day * DAY_MS - 30_000).toISOString(),
    steps: [{ index: 0, type: 'llm', tokens: 10 }],
  }));
  const res = await app.http.post('/ingest/agent/runs/batch').set(bearer(key)).send({ runs }).expect(200);
  expect(res.body.results.every((result: { id?: string }) => result.id)).toBe(true);
  await app.writer.flushedAll();
  // Newest first, as the runs were sent: one a day.
  const sent = res.body.results as { id: string; timestamp: string }[];
  return { project: created.body as { id: string; retention_days: number }, key, sent };
}

const count = (table: 'runs' | 'run_steps', projectId: string) => storedRowCount(app.stores.ch, table, projectId);

describe('retention_days on projects', () => {
  it('defaults to 400, is set on create and PATCH, and shows in the list', async () => {
    const plain = await app.http
      .post(projects())
      .set(bearer(admin.token))
      .send({ name: `p-${randomUUID()}` })
      .expect(201);
    expect(plain.body.retention_days).toBe(400);
    const short = await app.http
      .post(projects())
      .set(bearer(admin.token))
      .send({ name: `p-${randomUUID()}`, retention_days: 7 })
      .expect(201);
    expect(short.body.retention_days).toBe(7);
    const patched = await app.http
      .patch(`${projects()}/${short.body.id}`)
      .set(bearer(admin.token))
      .send({ retention_days: 3650 })
      .expect(200);
    expect(patched.body).toMatchObject({ name: short.body.name, retention_days: 3650 });
    const list = await app.http.get(projects()).set(bearer(admin.token)).expect(200);
    expect(list.body.find((project: { id: string }) => project.id === short.body.id).retention_days).toBe(3650);
  });

  it.each([[0], [3651], [1.5], ['30']])('retention_days %p is a 400', async (days) => {
    expectFieldError(
      await app.http
        .post(projects())
        .set(bearer(admin.token))
        .send({ name: `p-${randomUUID()}`, retention_days: days }),
      'retention_days',
    );
  });

  it('a PATCH needs a name or a retention', async () => {
    const { project } = await projectWithRuns();
    const res = await app.http.patch(`${projects()}/${project.id}`).set(bearer(admin.token)).send({});
    expect(res.status).toBe(400);
  });
});

describe('runs past retention are never listed or counted', () => {
  let p: Awaited<ReturnType<typeof projectWithRuns>>;
  beforeAll(async () => {
    p = await projectWithRuns(3);
  });
  const get = (path: string, query: Record<string, string> = {}) =>
    app.http.get(`/projects/${p.project.id}/agent/${path}`).query(query).set(bearer(p.key)).expect(200);

  it('the run list, the summary and the health report hold the last 3 days only', async () => {
    const list = await get('runs');
    expect(list.headers['x-total-count']).toBe('3');
    expect((await get('summary')).body.current.total_runs).toBe(3);
    expect((await get('health')).body).toMatchObject([{ agent_name: 'agent', total_runs: 3 }]);
  });

  it('the time series keeps its buckets, those past retention empty', async () => {
    const { body } = await get('timeseries', {
      from: new Date(app.clock.now().getTime() - 10 * DAY_MS).toISOString(),
      bucket: 'day',
    });
    expect(body.buckets.length).toBeGreaterThanOrEqual(10);
    expect(body.buckets.reduce((sum: number, bucket: { total_runs: number }) => sum + bucket.total_runs, 0)).toBe(3);
  });

  it('the alert preview and the evaluator see the same 3', async () => {
    const preview = await app.http
      .post(`${projects()}/${p.project.id}/alert-rules/preview`)
      .set(bearer(admin.token))
      .send({ signal: 'total_runs', comparator: 'gt', threshold: 0, window_seconds: 30 * 86_400 })
      .expect(200);
    expect(preview.body).toMatchObject({ value: 3, sample_count: 3 });
  });

  it('a run past retention is gone to a read of it or of its steps (404); a retained one reads', async () => {
    const runPath = (run: { id: string }) => `/projects/${p.project.id}/agent/runs/${run.id}`;
    const read = (path: string, timestamp?: string) =>
      app.http
        .get(path)
        .query(timestamp ? { timestamp } : {})
        .set(bearer(p.key));
    const [kept, , , , past] = p.sent;
    expect((await read(runPath(kept))).status).toBe(200);
    expect((await read(`${runPath(kept)}/steps`, kept.timestamp)).body).toHaveLength(1);
    expectError(await read(runPath(past)), 404, 'not_found');
    expectError(await read(runPath(past), past.timestamp), 404, 'not_found');
    expectError(await read(`${runPath(past)}/steps`, past.timestamp), 404, 'not_found');
  });

  it('a longer retention, set here, shows the older runs at once', async () => {
    await app.http
      .patch(`${projects()}/${p.project.id}`)
      .set(bearer(admin.token))
      .send({ retention_days: 30 })
      .expect(200);
    expect((await get('summary')).body.current.total_runs).toBe(10);
    await app.http
      .patch(`${projects()}/${p.project.id}`)
      .set(bearer(admin.token))
      .send({ retention_days: 3 })
      .expect(200);
  });
});

// A pass deletes from the worker's whole ClickHouse, where every earlier test file left runs: its lightweight DELETEs
// wait for mutations over all those parts, which took over 30 s in a full suite on two cores.
const PASS_TIMEOUT_MS = 120_000;

describe('the deletion job', () => {
  it(
    "deletes the runs and steps past each project's retention, and keeps the rest",
    async () => {
      const kept = await projectWithRuns();
      const trimmed = await projectWithRuns(5);
      await app.retentionDeletion.run();
      expect([await count('runs', trimmed.project.id), await count('run_steps', trimmed.project.id)]).toEqual([5, 5]);
      expect([await count('runs', kept.project.id), await count('run_steps', kept.project.id)]).toEqual([10, 10]);
      // A second pass finds nothing more to delete for them.
      await app.retentionDeletion.run();
      expect(await count('runs', trimmed.project.id)).toBe(5);
    },
    PASS_TIMEOUT_MS,
  );

  it(
    'deletes every run and step of a deleted project, and drops the parts it empties (or `runs` stops merging)',
    async () => {
      const { project } = await projectWithRuns();
      await app.http.delete(`${projects()}/${project.id}`).set(bearer(admin.token)).expect(204);
      await app.retentionDeletion.run();
      expect([await count('runs', project.id), await count('run_steps', project.id)]).toEqual([0, 0]);
      // A part emptied whole loses its projections; left there, it refuses every merge with its neighbours that have
      // them ("Parts have different projection sets"). No part is left holding no row.
      const emptied = await app.stores.ch.query({
        name: 'test.emptied-parts',
        sql: `SELECT name FROM system.parts
              WHERE database = currentDatabase() AND table = 'runs' AND active AND has_lightweight_delete
                AND name NOT IN (SELECT DISTINCT _part FROM runs)`,
      });
      expect(emptied).toEqual([]);
    },
    PASS_TIMEOUT_MS,
  );

  it('two instances dropping the same emptied parts at once both succeed', async () => {
    const { project } = await projectWithRuns();
    // Its runs deleted as a deletion of another instance would: every part holding them emptied whole.
    await app.stores.ch.command('DELETE FROM runs WHERE project_id = {project:UUID}', { project: project.id });
    const [first, second] = await Promise.all([
      dropEmptiedParts(app.stores.ch, 'runs'),
      dropEmptiedParts(app.stores.ch, 'runs'),
    ]);
    expect(first.length).toBeGreaterThan(0);
    expect(second).toEqual(first);
    expect(await dropEmptiedParts(app.stores.ch, 'runs')).toEqual([]);
  });
});
