// Spend and tokens over time, per agent and per model (docs/usage.md): GET /projects/{p}/agent/usage through the
// real server. Sums per group and bucket equal the runs' and steps' own; groups come most spent first; running runs
// and runs past retention are not counted; the window's rules and the readers are the reports'.
import { randomUUID } from 'node:crypto';
import { expectError, keyAuth, postBatch, postSteps, startRun } from '../ingest/run-helpers';
import { startTestApp, type TestApp } from '../support/app';
import { bearer, registerUser, setUpProject } from '../support/fixtures';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.close());

const HOUR = 3_600_000;
interface UsageGroup {
  name: string | null;
  cost_usd: number;
  tokens: number;
  buckets: { start: string; cost_usd: number; tokens: number }[];
}

/** The start of the hour `hoursAgo` hours before the hour of the server's clock, and a moment in it. */
function hour(hoursAgo: number) {
  const start = Math.floor(app.clock.now().getTime() / HOUR) * HOUR - hoursAgo * HOUR;
  return {
    start: new Date(start).toISOString(),
    at: (minutes: number) => new Date(start + minutes * 60_000).toISOString(),
  };
}

const llmStep = (index: number, model: string | null, tokens: number, cost: number) => ({
  index,
  type: 'llm',
  ...(model ? { model } : {}),
  tokens,
  cost_usd: cost,
});
const run = (agent: string, timestamp: string, steps: object[], extra: object = {}) => ({
  agent_name: agent,
  timestamp,
  finished_at: timestamp,
  status: 'completed',
  steps,
  ...extra,
});

async function usage(projectId: string, key: string, query: Record<string, string>) {
  // Two whole hours: minute buckets, whatever the time the test runs at.
  const window = { from: hour(2).start, to: hour(0).start };
  return app.http
    .get(`/projects/${projectId}/agent/usage`)
    .query({ ...window, ...query })
    .set(keyAuth(key));
}

describe('per agent and per model', () => {
  let project: Awaited<ReturnType<typeof setUpProject>>;
  beforeAll(async () => {
    project = await setUpProject(app);
    const [two, one] = [hour(2), hour(1)];
    const res = await postBatch(app, project.key, [
      run('planner', two.at(5), [llmStep(0, 'gpt-4o', 1000, 0.01), { index: 1, type: 'tool', tool_name: 'search' }]),
      run('planner', two.at(40), [llmStep(0, 'gpt-4o-mini', 300, 0.0004), llmStep(1, 'gpt-4o', 200, 0.002)]),
      run('support', one.at(10), [llmStep(0, 'gpt-4o-mini', 500, 0.0007), llmStep(1, null, 50, 0.0001)]),
      // A cost sent at finish wins over the steps' for the run (by agent); by model, the steps count.
      run('support', one.at(20), [llmStep(0, 'gpt-4o', 100, 0.001)], { total_cost_usd: 0.5, total_tokens: 100 }),
    ]);
    expect(res.body.results.every((result: { id?: string }) => result.id)).toBe(true);
    // Running, with a step that cost 9 dollars: not counted until it finishes.
    const running = await startRun(app, project.key, { agent_name: 'planner', timestamp: one.at(30) });
    expect((await postSteps(app, project.key, running, [llmStep(0, 'gpt-4o', 9000, 9)])).status).toBe(200);
  });

  it('by agent: each agent’s finished runs, their totals per bucket, most spent first', async () => {
    const res = await usage(project.project.id, project.key, { by: 'agent' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ bucket: 'minute', by: 'agent', others: null });
    const groups = res.body.groups as UsageGroup[];
    expect(groups.map((group) => [group.name, group.cost_usd, group.tokens])).toEqual([
      ['support', expect.closeTo(0.5008, 12), 650],
      ['planner', expect.closeTo(0.0124, 12), 1500],
    ]);
    // Minute buckets (the window is three hours): every one present, the runs' in theirs.
    const planner = groups[1].buckets;
    expect(planner).toHaveLength(groups[0].buckets.length);
    expect(planner.filter((bucket) => bucket.tokens > 0)).toEqual([
      { start: hour(2).at(5), cost_usd: 0.01, tokens: 1000 },
      { start: hour(2).at(40), cost_usd: expect.closeTo(0.0024, 12), tokens: 500 },
    ]);
  });

  it('by model: the steps of each model, steps that name none in the null group, most spent first', async () => {
    const res = await usage(project.project.id, project.key, { by: 'model' });
    expect(res.status).toBe(200);
    const groups = res.body.groups as UsageGroup[];
    expect(groups.map((group) => [group.name, group.cost_usd, group.tokens])).toEqual([
      ['gpt-4o', expect.closeTo(0.013, 12), 1300],
      ['gpt-4o-mini', expect.closeTo(0.0011, 12), 800],
      [null, expect.closeTo(0.0001, 12), 50],
    ]);
  });

  it("agent_name: that agent's runs alone, by agent and by model", async () => {
    const byAgent = await usage(project.project.id, project.key, { by: 'agent', agent_name: 'support' });
    expect((byAgent.body.groups as UsageGroup[]).map((group) => group.name)).toEqual(['support']);
    const byModel = await usage(project.project.id, project.key, { by: 'model', agent_name: 'support' });
    expect((byModel.body.groups as UsageGroup[]).map((group) => [group.name, group.cost_usd, group.tokens])).toEqual([
      ['gpt-4o', expect.closeTo(0.001, 12), 100],
      ['gpt-4o-mini', expect.closeTo(0.0007, 12), 500],
      [null, expect.closeTo(0.0001, 12), 50],
    ]);
  });

  it('hour and day buckets for longer windows, as the time series picks them', async () => {
    const day = await app.http
      .get(`/projects/${project.project.id}/agent/usage`)
      .query({ by: 'agent', from: new Date(app.clock.now().getTime() - 30 * 24 * HOUR).toISOString() })
      .set(keyAuth(project.key));
    expect(day.body.bucket).toBe('day');
    const week = await app.http
      .get(`/projects/${project.project.id}/agent/usage`)
      .query({ by: 'model', from: new Date(app.clock.now().getTime() - 7 * 24 * HOUR).toISOString() })
      .set(keyAuth(project.key));
    expect(week.body.bucket).toBe('hour');
    expect(week.body.buckets).toBeUndefined();
    expect((week.body.groups as UsageGroup[])[0].buckets.length).toBeLessThanOrEqual(200);
    expect((week.body.groups as UsageGroup[])[0].cost_usd).toBeCloseTo(0.013, 12);
  });
});

it('more than 20 groups: the 20 that spent most, the rest summed in `others`', async () => {
  const { project, key } = await setUpProject(app);
  const agents = Array.from({ length: 23 }, (_, i) =>
    run(`agent-${i}`, hour(1).at(i), [llmStep(0, 'm', i + 1, i + 1)]),
  );
  await postBatch(app, key, agents);
  const res = await usage(project.id, key, { by: 'agent' });
  expect((res.body.groups as UsageGroup[]).map((group) => group.name)).toEqual(
    Array.from({ length: 20 }, (_, i) => `agent-${22 - i}`),
  );
  expect(res.body.others).toMatchObject({ groups: 3, cost_usd: 6, tokens: 6 });
});

it('runs past the project’s retention are not counted', async () => {
  const admin = await registerUser(app);
  const created = await app.http
    .post(`/admin/orgs/${admin.org.id}/projects`)
    .set(bearer(admin.token))
    .send({ name: `p-${randomUUID()}`, retention_days: 1 })
    .expect(201);
  const { key } = (
    await app.http
      .post(`/admin/orgs/${admin.org.id}/projects/${created.body.id}/api-keys`)
      .set(bearer(admin.token))
      .send({})
  ).body;
  const old = new Date(app.clock.now().getTime() - 2 * 24 * HOUR).toISOString();
  await postBatch(app, key, [
    run('a', old, [llmStep(0, 'm', 10, 1)]),
    run('a', hour(1).at(1), [llmStep(0, 'm', 5, 2)]),
  ]);
  const res = await app.http
    .get(`/projects/${created.body.id}/agent/usage`)
    .query({ by: 'model', from: new Date(app.clock.now().getTime() - 3 * 24 * HOUR).toISOString() })
    .set(keyAuth(key));
  expect((res.body.groups as UsageGroup[]).map((group) => [group.cost_usd, group.tokens])).toEqual([[2, 5]]);
});

describe('refusals', () => {
  it('400 for a missing or unknown `by`, a bad window, an unknown parameter', async () => {
    const { project, key } = await setUpProject(app);
    const get = (query: Record<string, string>) =>
      app.http.get(`/projects/${project.id}/agent/usage`).query(query).set(keyAuth(key));
    expectError(await get({}), 400, 'validation_failed');
    expectError(await get({ by: 'tool' }), 400, 'validation_failed');
    expectError(await get({ by: 'agent', bucket: 'hour' }), 400, 'validation_failed');
    const now = app.clock.now().getTime();
    expectError(
      await get({ by: 'agent', from: new Date(now).toISOString(), to: new Date(now - HOUR).toISOString() }),
      400,
      'invalid_window',
    );
    expectError(await get({ by: 'agent', from: new Date(now - 401 * 24 * HOUR).toISOString() }), 400, 'invalid_window');
  });

  it("another project's key gets 403, a non-member 404; a member's session reads it", async () => {
    const { project, admin } = await setUpProject(app);
    const other = await setUpProject(app);
    expectError(
      await app.http.get(`/projects/${project.id}/agent/usage`).query({ by: 'agent' }).set(keyAuth(other.key)),
      403,
      'forbidden',
    );
    expectError(
      await app.http.get(`/projects/${project.id}/agent/usage`).query({ by: 'agent' }).set(bearer(other.admin.token)),
      404,
      'not_found',
    );
    const read = await app.http
      .get(`/projects/${project.id}/agent/usage`)
      .query({ by: 'agent' })
      .set(bearer(admin.token));
    expect(read.status).toBe(200);
  });
});
