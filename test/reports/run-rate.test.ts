// A long window of few runs reads raw rows; of many runs, the rollups (REPORT_RAW_MAX_RUNS, src/reports/run-rate.ts).
// Both paths give the same figures. The statements each report sends are recorded on their way to ClickHouse.
import { anotherService, startTestApp, type TestApp } from '../support/app';
import { bearer, setUpProject } from '../support/fixtures';

const HOUR = 3_600_000;
const DAY = 86_400_000;
const RUNS = 40;

let app: TestApp;
let projectId: string;
let key: string;
const sent: { name: string; sql: string }[] = [];
const now = new Date();
const window = { from: new Date(now.getTime() - 30 * DAY).toISOString(), to: now.toISOString() };

beforeAll(async () => {
  app = await startTestApp();
  app.clock.set(now);
  ({ key } = await setUpProject(app).then((setup) => ((projectId = setup.project.id), setup)));
  // A run every 4 hours over the last week (the rate's stretch), of durations spread over many buckets.
  const runs = Array.from({ length: RUNS }, (_, i) => {
    const start = new Date(now.getTime() - i * 4 * HOUR - 1000);
    return {
      agent_name: i % 3 ? 'planner' : 'coder',
      timestamp: start.toISOString(),
      status: i % 5 ? 'completed' : 'failed',
      finished_at: new Date(start.getTime() + 37 * i * i + 5).toISOString(),
    };
  });
  await app.http.post('/ingest/agent/runs/batch').set(bearer(key)).send({ runs }).expect(200);
  await app.writer.flushedAll();
  const query = app.stores.ch.query.bind(app.stores.ch);
  app.stores.ch.query = (request) => {
    sent.push({ name: request.name, sql: request.sql });
    return query(request);
  };
});
afterAll(() => app.close());

/** A report read through a service with the given REPORT_RAW_MAX_RUNS: its body and the statements it sent. */
async function read(rawMaxRuns: number, report: string, query: Record<string, string> = window) {
  const service = anotherService(app, { reportRawMaxRuns: rawMaxRuns });
  sent.length = 0;
  const res = await service.http.get(`/projects/${projectId}/agent/${report}`).query(query).set(bearer(key));
  expect(res.status).toBe(200);
  return {
    body: res.body as unknown,
    statements: sent.map((statement) => statement.name),
    readsRollups: readsRollups(),
  };
}

/** Whether a statement sent reads a rollup: each such read names its projection (src/reports/rollups.ts). */
const readsRollups = () =>
  sent.some(({ name, sql }) => name !== 'reports.run_rate' && sql.includes('preferred_optimize_projection_name'));

it.each(['summary', 'health', 'timeseries'])(
  "a 30-day %s of a project of few runs reads raw rows, as the rollups' figures",
  async (report) => {
    // 40 runs a week: ~343 in the two 30-day windows.
    const raw = await read(1000, report);
    expect(raw.statements).toContain('reports.run_rate');
    expect(raw.readsRollups).toBe(false);
    const rollups = await read(10, report);
    expect(rollups.readsRollups).toBe(true);
    expect(rollups.body).toEqual(raw.body);
  },
);

it('a time series reads raw rows up to five times REPORT_RAW_MAX_RUNS, where a summary reads the rollups', async () => {
  // ~343 runs in the summary's two windows, ~171 in the time series' one.
  expect((await read(100, 'summary')).readsRollups).toBe(true);
  expect((await read(100, 'timeseries')).readsRollups).toBe(false);
  expect((await read(30, 'timeseries')).readsRollups).toBe(true);
});

it("counts a project's rate once while it is fresh, and not at all with REPORT_RAW_MAX_RUNS=0", async () => {
  const service = anotherService(app, { reportRawMaxRuns: 1000 });
  sent.length = 0;
  for (let i = 0; i < 3; i += 1) {
    await service.http.get(`/projects/${projectId}/agent/summary`).query(window).set(bearer(key)).expect(200);
  }
  expect(sent.filter(({ name }) => name === 'reports.run_rate')).toHaveLength(1);
  // Eleven minutes on, the rate is counted again.
  app.clock.advance(11 * 60);
  await service.http.get(`/projects/${projectId}/agent/summary`).query(window).set(bearer(key)).expect(200);
  expect(sent.filter(({ name }) => name === 'reports.run_rate')).toHaveLength(2);
  app.clock.set(now);
  const byLength = await read(0, 'summary');
  expect(byLength.statements).not.toContain('reports.run_rate');
  expect(byLength.readsRollups).toBe(true);
});
