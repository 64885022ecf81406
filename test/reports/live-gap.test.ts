// A run caught between its finished row and its tombstone (the instant between the finish's two writes, or for
// longer when the tombstone's write failed) is in `runs` and still live: every report counts it once, finished.
import { signalReader } from '../../src/reports/signal-reader';
import { startTestApp, type TestApp } from '../support/app';
import { bearer, setUpProject } from '../support/fixtures';
import { insertFinishedRowOnly } from '../ingest/run-helpers';
import { MINUTE } from './dataset';

let app: TestApp;
let projectId: string;
let key: string;
const now = new Date(Math.floor(Date.now() / 1000) * 1000);
const iso = (date: Date) => date.toISOString();
const window = { from: iso(new Date(now.getTime() - 60 * MINUTE)), to: iso(now) };
const get = (report: string, query: Record<string, string | number> = window) =>
  app.http.get(`/projects/${projectId}/agent/${report}`).query(query).set(bearer(key)).expect(200);

beforeAll(async () => {
  app = await startTestApp();
  app.clock.set(now);
  ({
    project: { id: projectId },
    key,
  } = await setUpProject(app));
  const started = async (minutesAgo: number) =>
    (
      await app.http
        .post('/ingest/agent/runs')
        .set(bearer(key))
        .send({ agent_name: 'planner', timestamp: iso(new Date(now.getTime() - minutesAgo * MINUTE)) })
        .expect(201)
    ).body as { id: string; timestamp: string };
  const [caught] = [await started(30), await started(20)];
  await insertFinishedRowOnly(app, projectId, { ...caught, agentName: 'planner' }, 5000);
});
afterAll(() => app.close());

it('the run list shows it once, finished, and counts it once', async () => {
  const res = await get('runs');
  expect(res.headers['x-total-count']).toBe('2');
  expect(res.body.map((run: { status: string }) => run.status)).toEqual(['running', 'completed']);
  const running = await get('runs', { ...window, status: 'running' });
  expect([running.headers['x-total-count'], running.body.length]).toEqual(['1', 1]);
  // An agent's first page is read from the newest keys of both sides, the run kept once (as the page of all runs).
  for (const limit of [2, 3]) {
    const byAgent = await get('runs', { ...window, agent_name: 'planner', limit });
    expect(byAgent.headers['x-total-count']).toBe('2');
    expect(byAgent.body.map((run: { status: string }) => run.status)).toEqual(['running', 'completed']);
  }
});

it('summary, health and the alert signals count it once, as finished', async () => {
  const summary = (await get('summary')).body.current;
  expect(summary).toMatchObject({ total_runs: 2, completed_runs: 1, completion_rate: 1, duration_p50_ms: 5000 });
  expect((await get('health')).body).toEqual([
    expect.objectContaining({ agent_name: 'planner', total_runs: 2, completed_runs: 1 }),
  ]);
  const [readings] = (
    await signalReader(app.stores.ch, app.config.reportLimits).readSignals(
      projectId,
      [{ agentName: null, windowSeconds: 3600 }],
      now,
    )
  ).values();
  expect([readings.total_runs, readings.completion_rate]).toEqual([
    { value: 2, sampleCount: 2 },
    { value: 1, sampleCount: 1 },
  ]);
});
