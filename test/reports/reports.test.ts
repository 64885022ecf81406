// The three report endpoints over a known data set, every field compared with values computed in the test.
import { signalReader } from '../../src/reports/signal-reader';
import { AGGREGATE_SIGNALS, scopeKey, type SignalScope } from '../../src/reports/signals';
import { startTestApp, type TestApp } from '../support/app';
import { bearer, setUpProject } from '../support/fixtures';
import {
  DAY,
  HOUR,
  MINUTE,
  approximately,
  buildDataset,
  byListOrder,
  expectedHealth,
  expectedRun,
  expectedSignals,
  expectedSummary,
  inWindow,
  loadDataset,
  type RunSpec,
} from './dataset';

let app: TestApp;
let projectId: string;
let key: string;
let runs: RunSpec[];
let now: Date;
let from: Date;
let to: Date;

const iso = (date: Date) => date.toISOString();
const get = (path: string, query: Record<string, string | number | boolean> = {}) =>
  app.http.get(path).query(query).set(bearer(key));

beforeAll(async () => {
  app = await startTestApp();
  // Whole seconds, so that every instant below is exact; real time, so the live rows are within their TTL.
  now = new Date(Math.floor(Date.now() / 1000) * 1000);
  app.clock.set(now);
  ({
    project: { id: projectId },
    key,
  } = await setUpProject(app));
  runs = buildDataset(now);
  await loadDataset(app, key, runs, now);
  to = now;
  from = new Date(now.getTime() - DAY);
}, 120_000);
afterAll(() => app.close());

const runsPath = () => `/projects/${projectId}/agent/runs`;
const window = () => ({ from: iso(from), to: iso(to) });

describe('GET /projects/:projectID/agent/summary', () => {
  it('reports the current and the previous window, every field', async () => {
    const res = await get(`/projects/${projectId}/agent/summary`, window()).expect(200);
    const previousFrom = new Date(from.getTime() - DAY);
    expect(res.body).toEqual({
      current: approximately(expectedSummary(inWindow(runs, from, to))),
      previous: approximately(expectedSummary(inWindow(runs, previousFrom, from))),
    });
    // The data set covers what the definitions distinguish.
    expect(res.body.current.total_runs).toBeGreaterThan(res.body.current.completed_runs);
    expect(res.body.current.loop_runs).toBeGreaterThan(0);
  });

  it('filters by agent_name', async () => {
    for (const agent of ['planner', 'coder', 'retired', 'nobody']) {
      const res = await get(`/projects/${projectId}/agent/summary`, { ...window(), agent_name: agent }).expect(200);
      const mine = runs.filter((run) => run.agent === agent);
      expect(res.body).toEqual({
        current: approximately(expectedSummary(inWindow(mine, from, to))),
        previous: approximately(expectedSummary(inWindow(mine, new Date(from.getTime() - DAY), from))),
      });
    }
  });

  it('defaults to the last 30 days by the service clock', async () => {
    const res = await get(`/projects/${projectId}/agent/summary`).expect(200);
    const start = new Date(now.getTime() - 30 * DAY);
    expect(res.body).toEqual({
      current: approximately(expectedSummary(inWindow(runs, start, now))),
      previous: approximately(expectedSummary([])),
    });
  });

  it('includes a run starting exactly at from and excludes one starting exactly at to', async () => {
    const atFrom = await get(`/projects/${projectId}/agent/summary`, {
      from: iso(from),
      to: iso(new Date(from.getTime() + 1)),
    }).expect(200);
    expect(atFrom.body.current.total_runs).toBe(runs.filter((run) => run.start.getTime() === from.getTime()).length);
    expect(atFrom.body.current.total_runs).toBe(1);
    const atTo = await get(`/projects/${projectId}/agent/summary`, {
      from: iso(to),
      to: iso(new Date(to.getTime() + 1)),
    }).expect(200);
    expect(atTo.body.current.total_runs).toBe(1);
    const before = await get(`/projects/${projectId}/agent/summary`, {
      from: iso(new Date(to.getTime() - 1)),
      to: iso(to),
    }).expect(200);
    expect(before.body.current.total_runs).toBe(1);
  });

  it('counts a window of running runs only, with zero finished-run signals', async () => {
    const recent = { from: iso(new Date(now.getTime() - 31 * 60_000)), to: iso(new Date(now.getTime() - 60_000)) };
    const res = await get(`/projects/${projectId}/agent/summary`, recent).expect(200);
    const expected = expectedSummary(inWindow(runs, new Date(recent.from), new Date(recent.to)));
    expect(expected.total_runs).toBe(3);
    expect(expected.completion_rate).toBe(0);
    expect(res.body.current).toEqual(approximately(expected));
  });
});

describe('windows on and off whole hours (rollups for whole hours, raw rows for the rest)', () => {
  const onHour = (ms: number) => Math.floor(ms / HOUR) * HOUR;
  const H = () => onHour(now.getTime());
  // Over a day of whole hours in the two windows, reports read rollups; under it, one raw pass (rollups.ts).
  const windows: [string, () => [number, number]][] = [
    ['rollups: from and to on whole hours, a run exactly at from', () => [H() - 6 * HOUR, H() + 7 * HOUR]],
    [
      'rollups: a run exactly at from, a millisecond before an hour (in the raw edge)',
      () => [H() - 6 * HOUR - 1, H() + 7 * HOUR],
    ],
    ['rollups: a run exactly at to, on an hour, left out', () => [H() - 20 * HOUR, H() - 6 * HOUR]],
    [
      'rollups: a run exactly where the partial hour before to begins',
      () => [H() - 20 * HOUR, H() - 6 * HOUR + 30 * MINUTE],
    ],
    [
      'rollups: a run exactly where the partial hour before from begins',
      () => [H() - 5 * HOUR - 30 * MINUTE, H() + 7 * HOUR + 30 * MINUTE],
    ],
    [
      "rollups: a run exactly at the previous window's from, a millisecond before an hour",
      () => [H() + 7 * HOUR - 1, H() + 20 * HOUR - 1],
    ],
    [
      'one raw pass: across one hour boundary, no whole hour',
      () => [H() - 6 * HOUR - 20 * MINUTE, H() - 6 * HOUR + 20 * MINUTE],
    ],
    ['one raw pass: one whole hour and a few milliseconds', () => [H() - 6 * HOUR - 1, H() - 5 * HOUR + 1]],
  ];
  it.each(windows)('%s: summary and health', async (_label, bounds) => {
    const [start, end] = bounds().map((ms) => new Date(ms));
    const previousStart = new Date(2 * start.getTime() - end.getTime());
    const query = { from: iso(start), to: iso(end) };
    const summary = await get(`/projects/${projectId}/agent/summary`, query).expect(200);
    expect(summary.body).toEqual({
      current: approximately(expectedSummary(inWindow(runs, start, end))),
      previous: approximately(expectedSummary(inWindow(runs, previousStart, start))),
    });
    expect(summary.body.current.total_runs + summary.body.previous.total_runs).toBeGreaterThan(0);
    const health = await get(`/projects/${projectId}/agent/health`, query).expect(200);
    expect(health.body).toEqual(approximately(expectedHealth(runs, start, end)));
    const hours = await get(`/projects/${projectId}/agent/timeseries`, { ...query, bucket: 'hour' }).expect(200);
    expect(hours.body.buckets).toEqual(approximately(expectedTimeseries(runs, start, end, HOUR)));
  });
});

/** Every bucket of `size` ms over [start, end), each with the summary of the runs in both it and the window (§9). */
function expectedTimeseries(mine: readonly RunSpec[], start: Date, end: Date, size: number) {
  const buckets = [];
  for (let at = Math.floor(start.getTime() / size) * size; at < end.getTime(); at += size) {
    const {
      unique_agents: _agents,
      unique_tools: _tools,
      ...measures
    } = expectedSummary(
      inWindow(mine, new Date(Math.max(at, start.getTime())), new Date(Math.min(at + size, end.getTime()))),
    );
    buckets.push({ start: new Date(at).toISOString(), ...measures });
  }
  return buckets;
}

describe('GET /projects/:projectID/agent/timeseries', () => {
  const BUCKET_MS = { minute: MINUTE, hour: HOUR, day: DAY } as const;
  const expectedBuckets = (mine: readonly RunSpec[], start: Date, end: Date, unit: keyof typeof BUCKET_MS) =>
    expectedTimeseries(mine, start, end, BUCKET_MS[unit]);
  const timeseries = (query: Record<string, string>) => get(`/projects/${projectId}/agent/timeseries`, query);

  it('hour buckets over a day off the hour: every bucket, partial ones at the edges, exact percentiles', async () => {
    const res = await timeseries({ ...window(), bucket: 'hour' }).expect(200);
    expect(res.body.bucket).toBe('hour');
    expect(res.body.buckets).toEqual(approximately(expectedBuckets(runs, from, to, 'hour')));
    expect(res.body.buckets).toHaveLength(from.getTime() % HOUR === 0 ? 24 : 25);
    const summary = await get(`/projects/${projectId}/agent/summary`, window()).expect(200);
    expect(res.body.buckets.reduce((sum: number, bucket: { total_runs: number }) => sum + bucket.total_runs, 0)).toBe(
      summary.body.current.total_runs,
    );
    // Empty buckets are there, with zeros.
    expect(res.body.buckets.some((bucket: { total_runs: number }) => bucket.total_runs === 0)).toBe(true);
  });

  it('minute and day buckets, and an agent filter', async () => {
    const twoHours = { from: iso(new Date(to.getTime() - 2 * HOUR)), to: iso(to) };
    const minutes = await timeseries({ ...twoHours, bucket: 'minute', agent_name: 'planner' }).expect(200);
    expect(minutes.body.buckets).toEqual(
      approximately(
        expectedBuckets(
          runs.filter((run) => run.agent === 'planner'),
          new Date(twoHours.from),
          to,
          'minute',
        ),
      ),
    );
    // Over a day of whole hours, hour and day buckets read the rollups (and raw rows for the edges and percentiles).
    const week = { from: iso(new Date(to.getTime() - 7 * DAY)), to: iso(to) };
    const days = await timeseries({ ...week, bucket: 'day' }).expect(200);
    expect(days.body.buckets).toEqual(approximately(expectedBuckets(runs, new Date(week.from), to, 'day')));
    const threeDays = { from: iso(new Date(to.getTime() - 3 * DAY + 17 * MINUTE)), to: iso(to) };
    const hours = await timeseries({ ...threeDays, bucket: 'hour', agent_name: 'coder' }).expect(200);
    expect(hours.body.buckets).toEqual(
      approximately(
        expectedBuckets(
          runs.filter((run) => run.agent === 'coder'),
          new Date(threeDays.from),
          to,
          'hour',
        ),
      ),
    );
  });

  it('auto takes the smallest bucket that gives at most 200; more than 1,500 buckets is invalid_window', async () => {
    expect(
      (await timeseries({ from: iso(new Date(to.getTime() - 2 * HOUR)), to: iso(to) }).expect(200)).body.bucket,
    ).toBe('minute');
    expect((await timeseries(window()).expect(200)).body.bucket).toBe('hour');
    expect(
      (await timeseries({ from: iso(new Date(to.getTime() - 30 * DAY)), to: iso(to) }).expect(200)).body.bucket,
    ).toBe('day');
    const tooMany = await timeseries({
      from: iso(new Date(to.getTime() - 2 * DAY)),
      to: iso(to),
      bucket: 'minute',
    }).expect(400);
    expect(tooMany.body.error.code).toBe('invalid_window');
    expect((await timeseries({ ...window(), bucket: 'week' }).expect(400)).body.error.code).toBe('validation_failed');
  });
});

describe('GET /projects/:projectID/agent/health', () => {
  it('has one entry per agent of either window, ordered by total_runs then agent_name', async () => {
    const res = await get(`/projects/${projectId}/agent/health`, window()).expect(200);
    expect(res.body).toEqual(approximately(expectedHealth(runs, from, to)));
    const retired = res.body.find((entry: { agent_name: string }) => entry.agent_name === 'retired');
    expect(retired).toMatchObject({ total_runs: 0, prev_total_runs: 3, completion_rate: 0, avg_cost_usd: 0 });
  });

  it('orders agents with equal totals by name, upper case first', async () => {
    const res = await get(`/projects/${projectId}/agent/health`, {
      from: iso(new Date(now.getTime() - 2 * DAY)),
      to: iso(now),
    }).expect(200);
    expect(res.body).toEqual(approximately(expectedHealth(runs, new Date(now.getTime() - 2 * DAY), now)));
  });
});

describe('GET /projects/:projectID/agent/runs', () => {
  const expectedList = (filter: (run: RunSpec) => boolean = () => true) =>
    inWindow(runs, from, to)
      .filter(filter)
      .sort(byListOrder)
      .map((run) => expectedRun(run, projectId));

  it('pages through every run of the window, newest first, each in its latest state', async () => {
    const all = expectedList();
    const seen: unknown[] = [];
    for (let offset = 0; offset < all.length + 7; offset += 7) {
      const res = await get(runsPath(), { ...window(), limit: 7, offset }).expect(200);
      expect(res.headers['x-total-count']).toBe(String(all.length));
      seen.push(...res.body);
    }
    expect(seen).toEqual(approximately(all));
  });

  it('returns 25 runs by default and up to 1000', async () => {
    const all = expectedList();
    const first = await get(runsPath(), window()).expect(200);
    expect(first.body).toEqual(approximately(all.slice(0, 25)));
    const everything = await get(runsPath(), { ...window(), limit: 1000 }).expect(200);
    expect(everything.body).toEqual(approximately(all));
  });

  it('orders runs with equal timestamps by id string, descending', async () => {
    const tie = new Date(now.getTime() - 5 * HOUR);
    const res = await get(runsPath(), { from: iso(tie), to: iso(new Date(tie.getTime() + 1)) }).expect(200);
    expect(res.body.map((run: { id: string }) => run.id)).toEqual([
      'ffffffff-0000-4000-8000-000000000001',
      '80000000-0000-4000-8000-800000000000',
      '00000000-0000-4000-8000-ffffffffffff',
    ]);
    const second = await get(runsPath(), {
      from: iso(tie),
      to: iso(new Date(tie.getTime() + 1)),
      limit: 1,
      offset: 1,
    }).expect(200);
    expect(second.body.map((run: { id: string }) => run.id)).toEqual(['80000000-0000-4000-8000-800000000000']);
    expect(second.headers['x-total-count']).toBe('3');
  });

  it.each([
    ['agent_name', { agent_name: 'coder' }, (run: RunSpec) => run.agent === 'coder'],
    ['status running', { status: 'running' }, (run: RunSpec) => run.status === 'running'],
    ['status completed', { status: 'completed' }, (run: RunSpec) => run.status === 'completed'],
    ['status abandoned', { status: 'abandoned' }, (run: RunSpec) => run.status === 'abandoned'],
    ['status failed', { status: 'failed' }, (run: RunSpec) => run.status === 'failed'],
    ['loop_detected true', { loop_detected: 'true' }, (run: RunSpec) => run.loopStepIndex !== null],
    ['loop_detected false', { loop_detected: 'false' }, (run: RunSpec) => run.loopStepIndex === null],
    [
      'agent and status running',
      { agent_name: 'planner', status: 'running' },
      (run: RunSpec) => run.agent === 'planner' && run.status === 'running',
    ],
    [
      'agent, loops and status',
      { agent_name: 'planner', loop_detected: 'true', status: 'running' },
      (run: RunSpec) => run.agent === 'planner' && run.loopStepIndex !== null && run.status === 'running',
    ],
    ['an unknown agent', { agent_name: 'nobody' }, () => false],
  ])('filters by %s', async (_label, filters, filter) => {
    const expected = expectedList(filter);
    const res = await get(runsPath(), { ...window(), ...filters, limit: 1000 }).expect(200);
    expect(res.headers['x-total-count']).toBe(String(expected.length));
    expect(res.body).toEqual(approximately(expected));
    const paged = await get(runsPath(), { ...window(), ...filters, limit: 2, offset: 1 }).expect(200);
    expect(paged.body).toEqual(approximately(expected.slice(1, 3)));
  });

  it('the data set has what the filters need', () => {
    const current = inWindow(runs, from, to);
    for (const status of ['running', 'completed', 'failed', 'cancelled', 'timed_out', 'abandoned']) {
      expect(current.some((run) => run.status === status)).toBe(true);
    }
    expect(current.some((run) => run.status === 'running' && run.loopStepIndex !== null)).toBe(true);
  });

  it('returns an empty page past the end, with the total', async () => {
    const res = await get(runsPath(), { ...window(), offset: 10_000 }).expect(200);
    expect(res.body).toEqual([]);
    expect(res.headers['x-total-count']).toBe(String(expectedList().length));
  });
});

describe('alert signals (signals.ts)', () => {
  const scopes: SignalScope[] = [
    { agentName: null, windowSeconds: 3600 },
    { agentName: null, windowSeconds: 86_400 },
    { agentName: null, windowSeconds: 2 * 86_400 },
    { agentName: 'planner', windowSeconds: 3600 },
    { agentName: 'planner', windowSeconds: 86_400 },
    { agentName: 'coder', windowSeconds: 86_400 },
    { agentName: 'retired', windowSeconds: 86_400 },
    { agentName: 'retired', windowSeconds: 2 * 86_400 },
    { agentName: 'nobody', windowSeconds: 600 },
    { agentName: 'reviewer', windowSeconds: 123 },
  ];
  let readings: Awaited<ReturnType<ReturnType<typeof signalReader>['readSignals']>>;
  beforeAll(async () => {
    readings = await signalReader(app.stores.ch, app.config.reportLimits).readSignals(projectId, scopes, now);
  });

  it('reads every scope in one call', () => {
    expect([...readings.keys()].sort()).toEqual(scopes.map(scopeKey).sort());
  });

  const cases = scopes.flatMap((scope) =>
    AGGREGATE_SIGNALS.map((signal) => [scope.agentName ?? 'all agents', scope.windowSeconds, signal, scope] as const),
  );
  it.each(cases)('%s · %ss · %s equals the value computed in the test', (_agent, windowSeconds, signal, scope) => {
    const windowRuns = inWindow(runs, new Date(now.getTime() - windowSeconds * 1000), now).filter(
      (run) => scope.agentName === null || run.agent === scope.agentName,
    );
    expect(readings.get(scopeKey(scope))![signal]).toEqual(approximately(expectedSignals(windowRuns)[signal]));
  });

  it.each([null, 'planner', 'coder'])(
    'a preview of %s over the last day equals the summary of that window exactly',
    async (agentName) => {
      const [reading] = (
        await signalReader(app.stores.ch, app.config.reportLimits).readSignals(
          projectId,
          [{ agentName, windowSeconds: 86_400 }],
          now,
        )
      ).values();
      const res = await get(`/projects/${projectId}/agent/summary`, {
        ...window(),
        ...(agentName ? { agent_name: agentName } : {}),
      }).expect(200);
      const summary = res.body.current;
      // Same SQL fragments, same runs: equal to the last bit, not approximately.
      expect({
        total_runs: reading.total_runs.value,
        completion_rate: reading.completion_rate.value,
        loop_rate: reading.loop_rate.value,
        avg_cost_usd: reading.avg_cost_usd.value,
        avg_tokens: reading.avg_tokens.value,
        duration_p50_ms: reading.duration_p50_ms.value,
        duration_p95_ms: reading.duration_p95_ms.value,
        duration_p99_ms: reading.duration_p99_ms.value,
      }).toStrictEqual({
        total_runs: summary.total_runs,
        completion_rate: summary.completion_rate,
        loop_rate: summary.loop_rate,
        avg_cost_usd: summary.avg_cost_usd,
        avg_tokens: summary.avg_tokens,
        duration_p50_ms: summary.duration_p50_ms,
        duration_p95_ms: summary.duration_p95_ms,
        duration_p99_ms: summary.duration_p99_ms,
      });
      expect(reading.total_runs.sampleCount).toBe(summary.total_runs);
      expect(reading.loop_rate.sampleCount).toBe(summary.total_runs);
    },
  );

  it.each([
    [
      'agent scopes only',
      [
        { agentName: 'planner', windowSeconds: 86_400 },
        { agentName: 'coder', windowSeconds: 3600 },
        { agentName: 'Zeta', windowSeconds: 86_400 },
      ],
    ],
    [
      'all-agent scopes only',
      [
        { agentName: null, windowSeconds: 1800 },
        { agentName: null, windowSeconds: 7 * 86_400 },
      ],
    ],
  ] as const)('reads %s the same way', async (_label, only) => {
    const read = await signalReader(app.stores.ch, app.config.reportLimits).readSignals(projectId, only, now);
    for (const scope of only) {
      const windowRuns = inWindow(runs, new Date(now.getTime() - scope.windowSeconds * 1000), now).filter(
        (run) => scope.agentName === null || run.agent === scope.agentName,
      );
      expect(read.get(scopeKey(scope))).toEqual(approximately(expectedSignals(windowRuns)));
    }
  });

  it('reads no scopes as an empty map, and an empty project as zeros', async () => {
    const reader = signalReader(app.stores.ch, app.config.reportLimits);
    expect((await reader.readSignals(projectId, [], now)).size).toBe(0);
    const empty = await reader.readSignals(
      '00000000-0000-4000-8000-000000000000',
      [{ agentName: null, windowSeconds: 60 }],
      now,
    );
    for (const signal of AGGREGATE_SIGNALS)
      expect(empty.get(scopeKey({ agentName: null, windowSeconds: 60 }))![signal]).toEqual({
        value: 0,
        sampleCount: 0,
      });
  });
});
