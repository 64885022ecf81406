// A report query over its memory budget fails with a clear 503, not a hang or a 500. Reports over long windows read
// pre-aggregates and stay far below any budget; a window of less than a day of whole hours reads raw rows, and its
// exact percentiles hold every duration in memory: that is the query these tests push over the budget.
import { startTestApp, type TestApp } from '../support/app';
import { bearer, setUpProject } from '../support/fixtures';

let app: TestApp;
let projectId: string;
let key: string;

beforeAll(async () => {
  app = await startTestApp({ REPORT_MAX_MEMORY_BYTES: '1' });
  ({ key } = await setUpProject(app).then((setup) => ((projectId = setup.project.id), setup)));
  await app.http.post('/ingest/agent/runs').set(bearer(key)).send({ agent_name: 'live' }).expect(201);
  // Enough finished runs for the exact percentiles to need more memory than the engine leaves untracked (a few
  // MiB per thread). Written straight into the table: this test is about the query budget, not about ingest.
  await app.stores.ch.command(
    `INSERT INTO runs (project_id, timestamp, id, agent_name, status, finished_at, duration_ms, total_steps, tool_names)
     SELECT {project_id:UUID}, now64(3) - toIntervalSecond(number % 86400), generateUUIDv4(number),
            concat('agent-', toString(number % 5)), 'completed', now64(3), number % 100000, 1, ['search']
     FROM numbers(600000)`,
    { project_id: projectId },
  );
  // 600,000 rows and their twelve projections: ~15 s on a quiet machine, over 30 s on a busy one.
}, 120_000);
afterAll(() => app.close());

const lastHalfDay = () => ({ from: new Date(Date.now() - 12 * 3_600_000).toISOString() });

it.each(['summary', 'timeseries'])(
  '%s over REPORT_MAX_MEMORY_BYTES is 503 unavailable with Retry-After',
  async (report) => {
    const res = await app.http
      .get(`/projects/${projectId}/agent/${report}`)
      .query(lastHalfDay())
      .set(bearer(key))
      .expect(503);
    expect(res.body.error.code).toBe('unavailable');
    expect(res.body.error.message).toMatch(/limit/);
    expect(res.headers['retry-after']).toBeDefined();
  },
);

it("a report's limits bind that report only: ingest and reading a run back work after it", async () => {
  await app.http.get(`/projects/${projectId}/agent/summary`).query(lastHalfDay()).set(bearer(key)).expect(503);
  const started = await app.http.post('/ingest/agent/runs').set(bearer(key)).send({ agent_name: 'after' }).expect(201);
  const steps = Array.from({ length: 200 }, (_, index) => ({
    index,
    type: 'llm',
    output: `thought ${index}`.repeat(50),
  }));
  await app.http
    .post(`/ingest/agent/runs/${started.body.id}/steps`)
    .set(bearer(key))
    .send({ timestamp: started.body.timestamp, steps })
    .expect(200);
  const run = await app.http
    .get(`/projects/${projectId}/agent/runs/${started.body.id}`)
    .query({ timestamp: started.body.timestamp })
    .set(bearer(key))
    .expect(200);
  expect(run.body.total_steps).toBe(200);
});
