// Every report statement that reads a pre-aggregate reads it: ClickHouse answers from a projection only while a
// query's expressions are the projection's own, and otherwise silently scans every row — right, but as slow as the
// window is long. The query plans say which projections each statement reads.
import { TupleParam } from '@clickhouse/client';
import { selectBucketCounts, selectDurationCounts } from '../../src/reports/durations';
import { GROUP_KEYS, SUMMARY_FILTERS, selectHealth, selectSummary, selectTimeseries } from '../../src/reports/queries';
import { windowParams } from '../../src/reports/rollups';
import { selectFinishedHourCounts } from '../../src/reports/run-list';
import { startTestApp, type TestApp } from '../support/app';
import { bearer, setUpProject } from '../support/fixtures';

const HOUR = 3_600_000;
const DAY = 86_400_000;

let app: TestApp;
let projectId: string;
// A month no other test file writes into (a partition of `runs` of this file alone; the test below takes 2040–2059):
// the projections are built below over this file's runs, not over all that other files left in the current month
// (in one CI run that took the hook past 120 s).
const now = new Date(Date.UTC(2060 + Math.floor(Math.random() * 20), Math.floor(Math.random() * 12), 20, 12));
// Two windows of three days, each with whole days, whole hours around them and partial hours at the edges.
const windows = {
  previous: { from: new Date(now.getTime() - 6 * DAY - 30 * 60_000), to: new Date(now.getTime() - 3 * DAY) },
  current: { from: new Date(now.getTime() - 3 * DAY), to: now },
};

beforeAll(async () => {
  app = await startTestApp();
  app.clock.set(now);
  const setup = await setUpProject(app);
  projectId = setup.project.id;
  // A run every 5 hours over the windows, so that every part read has its projections.
  const runs = Array.from({ length: 30 }, (_, i) => {
    const start = new Date(now.getTime() - i * 5 * HOUR - 1000);
    return {
      agent_name: i % 2 ? 'planner' : 'coder',
      timestamp: start.toISOString(),
      status: 'completed',
      finished_at: new Date(start.getTime() + 100 * i).toISOString(),
    };
  });
  await app.http.post('/ingest/agent/runs/batch').set(bearer(setup.key)).send({ runs }).expect(200);
  await app.writer.flushedAll();
  // A flush's part gets its projections from its first merge (schema/clickhouse/0010), so they are built here: in one
  // mutation per month, each a wait for the engine's background pool, which the other test files keep busy (one
  // mutation per projection and month, 24 waits, took this hook past 120 s in a CI run).
  const months = new Set([windows.previous.from, now].map((date) => date.toISOString().slice(0, 7).replace('-', '')));
  const projections = [...new Set(CASES.flatMap(([, , , named]) => named))];
  for (const month of months)
    await app.stores.ch.command(
      `ALTER TABLE runs ${projections
        .map((projection) => `MATERIALIZE PROJECTION ${projection} IN PARTITION ${month}`)
        .join(', ')} SETTINGS mutations_sync = 1`,
    );
}, 120_000);
afterAll(() => app.close());

const agentFilter = [SUMMARY_FILTERS.agent_name];
const summaryKeys = { is_current: GROUP_KEYS.is_current };
const cellParams = { buckets: [64], cells: [new TupleParam([1, 64])] };

const CASES: [string, string, Record<string, unknown>, string[]][] = [
  // Each read names its projection (a tie in marks to read, as over these few runs, would leave the choice open).
  ['the summary of all agents', selectSummary([], 'rollups'), {}, ['hourly_all_agents']],
  ['the summary of one agent', selectSummary(['agent_name'], 'rollups'), {}, ['hourly']],
  ['health', selectHealth('rollups'), {}, ['hourly']],
  ['the time series by the hour', selectTimeseries([], 'hour', 'rollups'), {}, ['hourly_all_agents']],
  ['the time series of one agent by the day', selectTimeseries(['agent_name'], 'day', 'rollups'), {}, ['hourly']],
  [
    "the percentiles' buckets of a window's days",
    selectBucketCounts(summaryKeys, [], 'day')[0].sql,
    {},
    ['daily_duration_buckets'],
  ],
  [
    "the percentiles' buckets of a window's hours outside its days",
    selectBucketCounts(summaryKeys, [], 'day')[1].sql,
    {},
    ['duration_buckets'],
  ],
  [
    "the percentiles' buckets of one agent's hours",
    selectBucketCounts(GROUP_KEYS, agentFilter, 'hour')[0].sql,
    {},
    ['agent_duration_buckets'],
  ],
  [
    "the percentiles' durations of a window's days",
    selectDurationCounts(summaryKeys, [], 'day')[0].sql,
    cellParams,
    ['daily_duration_values'],
  ],
  [
    "the percentiles' durations of a window's hours outside its days",
    selectDurationCounts(summaryKeys, [], 'day')[1].sql,
    cellParams,
    ['duration_values'],
  ],
  [
    "the percentiles' durations of one agent's hours outside its days",
    selectDurationCounts(summaryKeys, agentFilter, 'day')[1].sql,
    cellParams,
    ['agent_duration_values'],
  ],
  [
    "the percentiles' durations of one agent's days",
    selectDurationCounts(summaryKeys, agentFilter, 'day')[0].sql,
    cellParams,
    ['daily_agent_duration_values'],
  ],
  [
    "the run list's counts per hour",
    selectFinishedHourCounts([]),
    { hours_start: windows.current.from, hours_end: windows.current.to },
    ['hourly_all_agents'],
  ],
  [
    "the run list's counts per hour of one agent",
    selectFinishedHourCounts(['agent_name']),
    { hours_start: windows.current.from, hours_end: windows.current.to },
    ['hourly'],
  ],
  [
    "the run list's counts per hour, filtered",
    selectFinishedHourCounts(['agent_name', 'status', 'loop_detected']),
    { hours_start: windows.current.from, hours_end: windows.current.to, status: 'completed', loop_detected: false },
    ['run_counts'],
  ],
];

it.each(CASES)('%s reads its pre-aggregates', async (_label, sql, params, projections) => {
  const plan = await app.stores.ch.query<{ explain: string }>({
    name: 'test.explain',
    sql: `EXPLAIN projections = 1 ${sql}`,
    params: {
      ...windowParams(projectId, windows, now),
      agent_name: 'planner',
      ...Object.fromEntries(
        Object.entries(params).map(([key, value]) => [
          key,
          value instanceof Date ? value.toISOString().replace('T', ' ').slice(0, 23) : value,
        ]),
      ),
    },
  });
  const read = [
    ...plan
      .map((row) => row.explain)
      .join('\n')
      .matchAll(/ReadFromMergeTree \((\w+)\)/g),
  ].map(([, name]) => name);
  for (const projection of projections) expect(read).toContainEqual(expect.stringMatching(`^(${projection})$`));
});

it("a flush's parts have no projections until a merge builds them, and the reports answer the same", async () => {
  // A month no other test writes into (a partition of `runs` of this test alone), the service's clock in it.
  const month = new Date(Date.UTC(2040 + Math.floor(Math.random() * 20), Math.floor(Math.random() * 12), 1));
  app.clock.set(new Date(month.getTime() + 25 * DAY));
  const partition = month.toISOString().slice(0, 7).replace('-', '');
  const { project, key } = await setUpProject(app);
  const flush = async (day: number) => {
    const timestamp = new Date(month.getTime() + day * DAY);
    const runs = [1, 2, 3].map((i) => ({
      agent_name: 'planner',
      timestamp: new Date(timestamp.getTime() + i * HOUR).toISOString(),
      status: i === 3 ? 'failed' : 'completed',
      finished_at: new Date(timestamp.getTime() + i * HOUR + 1000 * i).toISOString(),
    }));
    await app.http.post('/ingest/agent/runs/batch').set(bearer(key)).send({ runs }).expect(200);
    await app.writer.flushedAll();
  };
  const parts = () =>
    app.stores.ch.query<{ projections: string[] }>({
      name: 'test.parts',
      sql: `SELECT projections FROM system.parts
            WHERE database = currentDatabase() AND table = 'runs' AND partition_id = {partition:String} AND active`,
      params: { partition },
    });
  const summary = async () =>
    (
      await app.http
        .get(`/projects/${project.id}/agent/summary`)
        .query({ from: month.toISOString(), to: new Date(month.getTime() + 20 * DAY).toISOString() })
        .set(bearer(key))
        .expect(200)
    ).body;
  await flush(2);
  await flush(5);
  expect((await parts()).map((part) => part.projections)).toEqual([[], []]);
  const beforeMerge = await summary();
  expect(beforeMerge.current).toMatchObject({ total_runs: 6, completed_runs: 4, duration_p50_ms: 2000 });

  await app.stores.ch.command(`OPTIMIZE TABLE runs PARTITION ${partition} FINAL`);
  const merged = await parts();
  expect(merged).toHaveLength(1);
  expect(merged[0].projections).toEqual(expect.arrayContaining(['hourly_all_agents', 'sessions', 'duration_values']));
  expect(await summary()).toEqual(beforeMerge);
  app.clock.set(now);
});
