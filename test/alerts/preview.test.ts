// Preview of a draft rule: the signal over [now − window, now), equal to the summary report over the same window.
import { startTestApp, type TestApp } from '../support/app';
import { alertProject, expectError, expectFieldError, finishedRun, keyAuth, type AlertProject } from './helpers';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ AUTH_RATE_LIMIT_PER_MINUTE: '100000' });
});
afterAll(() => app.close());

const loopSteps = Array.from({ length: 4 }, (_, index) => ({
  index,
  type: 'tool',
  tool_name: 'search',
  input: '{"q":1}',
  output: 'same',
}));

/** A varied project: two agents, every finished status, running runs, loops, costs, tokens and durations. */
async function seed(p: AlertProject) {
  const now = app.clock.now();
  const runs: Record<string, unknown>[] = [];
  const statuses = ['completed', 'completed', 'failed', 'completed', 'cancelled', 'timed_out', 'completed'];
  for (let i = 0; i < 40; i += 1) {
    runs.push(
      finishedRun(now, {
        agent_name: i % 3 === 0 ? 'coder' : 'planner',
        status: statuses[i % statuses.length],
        secondsAgo: 20 + i * 70, // spread over ~47 minutes: some runs in the 5-minute window, all in the hour
        durationMs: 500 + ((i * 7919) % 20_000),
        total_cost_usd: Math.round(((i * 37) % 100) * 0.0137 * 1e4) / 1e4,
        total_tokens: 100 + ((i * 113) % 5000),
        steps: i % 5 === 0 ? loopSteps : [],
      }),
    );
  }
  // Runs still running count in total_runs and loop_rate only.
  for (let i = 0; i < 3; i += 1) {
    runs.push({ agent_name: 'planner', timestamp: new Date(now.getTime() - (30 + i * 40) * 1000).toISOString() });
  }
  // Outside every window: just before an hour ago, and exactly at `now` (windows end before now).
  runs.push(finishedRun(now, { secondsAgo: 3601 }));
  await p.ingest(runs);
}

const SHARED_SIGNALS = [
  'total_runs',
  'completion_rate',
  'loop_rate',
  'avg_cost_usd',
  'avg_tokens',
  'duration_p50_ms',
  'duration_p95_ms',
  'duration_p99_ms',
] as const;

describe('preview equals the summary report over the same window', () => {
  let p: AlertProject;
  beforeAll(async () => {
    p = await alertProject(app);
    await seed(p);
  });

  async function summary(windowSeconds: number, agentName: string | null) {
    const to = app.clock.now();
    const from = new Date(to.getTime() - windowSeconds * 1000);
    const query: Record<string, string> = { from: from.toISOString(), to: to.toISOString() };
    if (agentName) query.agent_name = agentName;
    const res = await app.http.get(`/projects/${p.project.id}/agent/summary`).query(query).set(keyAuth(p.key));
    expect(res.status).toBe(200);
    return res.body.current as Record<string, number>;
  }

  describe.each([
    { windowSeconds: 300, agentName: null, label: 'all agents · last 5m' },
    { windowSeconds: 3600, agentName: null, label: 'all agents · last 1h' },
    { windowSeconds: 3600, agentName: 'planner', label: 'agent planner · last 1h' },
    { windowSeconds: 900, agentName: 'coder', label: 'agent coder · last 15m' },
  ])('$label', ({ windowSeconds, agentName, label }) => {
    it.each(SHARED_SIGNALS)('%s', async (signal) => {
      const current = await summary(windowSeconds, agentName);
      const res = await p.preview({
        signal,
        comparator: 'gt',
        threshold: 0,
        window_seconds: windowSeconds,
        agent_name: agentName,
        min_requests: 0,
      });
      expect(res.status).toBe(200);
      expect(res.body.scope_label).toBe(label);
      expect(res.body.value).toBeCloseTo(current[signal], 9);
      // Every scope here has completed runs, so the finished runs are completed_runs / completion_rate.
      expect(current.completion_rate).toBeGreaterThan(0);
      const finished = Math.round(current.completed_runs / current.completion_rate);
      const expectedSamples = signal === 'total_runs' || signal === 'loop_rate' ? current.total_runs : finished;
      expect(res.body.sample_count).toBe(expectedSamples);
      expect(res.body.would_breach).toBe(current[signal] > 0);
    });

    it('failure_rate, total_cost_usd match the summary (1 − completion_rate; avg cost × finished runs)', async () => {
      const current = await summary(windowSeconds, agentName);
      const completion = (
        await p.preview({
          signal: 'completion_rate',
          comparator: 'lt',
          window_seconds: windowSeconds,
          agent_name: agentName,
        })
      ).body;
      const failure = (
        await p.preview({
          signal: 'failure_rate',
          comparator: 'gt',
          window_seconds: windowSeconds,
          agent_name: agentName,
        })
      ).body;
      const totalCost = (
        await p.preview({
          signal: 'total_cost_usd',
          comparator: 'gt',
          threshold: 0,
          window_seconds: windowSeconds,
          agent_name: agentName,
        })
      ).body;
      expect(failure.sample_count).toBe(completion.sample_count);
      expect(failure.value).toBeCloseTo(completion.sample_count === 0 ? 0 : 1 - current.completion_rate, 9);
      expect(totalCost.value).toBeCloseTo(current.avg_cost_usd * completion.sample_count, 6);
    });
  });

  it('the seeded data exercises what it should: running runs, loops, failures, two agents', async () => {
    const current = await summary(3600, null);
    expect(current.total_runs).toBe(43);
    expect(current.loop_runs).toBeGreaterThan(0);
    expect(current.completion_rate).toBeGreaterThan(0);
    expect(current.completion_rate).toBeLessThan(1);
    expect(current.unique_agents).toBe(2);
  });
});

describe('preview', () => {
  let p: AlertProject;
  beforeAll(async () => {
    p = await alertProject(app);
    await p.ingest(
      Array.from({ length: 4 }, (_, i) =>
        finishedRun(app.clock.now(), { status: i === 0 ? 'failed' : 'completed', secondsAgo: 30 }),
      ),
    );
  });

  it('defaults: window 300 s, min_requests 10, threshold of the signal', async () => {
    const res = await p.preview({ signal: 'completion_rate', comparator: 'lt' });
    expect(res.status).toBe(200);
    // 3 of 4 completed (0.75 < 0.9) but 4 < min_requests 10: no breach.
    expect(res.body).toEqual({
      value: 0.75,
      sample_count: 4,
      scope_label: 'all agents · last 5m',
      would_breach: false,
    });
    const enough = await p.preview({ signal: 'completion_rate', comparator: 'lt', min_requests: 4 });
    expect(enough.body.would_breach).toBe(true);
  });

  it.each([
    { comparator: 'gt', threshold: 4, breach: false },
    { comparator: 'gte', threshold: 4, breach: true },
    { comparator: 'lt', threshold: 4, breach: false },
    { comparator: 'lte', threshold: 4, breach: true },
    { comparator: 'lt', threshold: 5, breach: true },
  ])('would_breach: 4 $comparator $threshold → $breach', async ({ comparator, threshold, breach }) => {
    const res = await p.preview({ signal: 'total_runs', comparator, threshold, min_requests: 0 });
    expect(res.body).toMatchObject({ value: 4, sample_count: 4, would_breach: breach });
  });

  it('an empty window reads 0 with sample_count 0', async () => {
    const res = await p.preview({
      signal: 'avg_cost_usd',
      comparator: 'gt',
      threshold: 1,
      agent_name: 'nobody',
      min_requests: 0,
    });
    expect(res.body).toEqual({ value: 0, sample_count: 0, scope_label: 'agent nobody · last 5m', would_breach: false });
    const lowRuns = await p.preview({ signal: 'total_runs', comparator: 'lt', agent_name: 'nobody', min_requests: 0 });
    expect(lowRuns.body).toMatchObject({ value: 0, would_breach: true });
  });

  it('takes the window at the time of the call ([now − window, now))', async () => {
    const before = (await p.preview({ signal: 'total_runs', comparator: 'lt', min_requests: 0, window_seconds: 60 }))
      .body.sample_count;
    expect(before).toBe(4);
    app.clock.advance(31); // the runs started 30 s ago; 61 s later they are outside a 60 s window
    try {
      expect(
        (await p.preview({ signal: 'total_runs', comparator: 'lt', min_requests: 0, window_seconds: 60 })).body
          .sample_count,
      ).toBe(0);
    } finally {
      app.clock.advance(-31);
    }
  });

  it.each([
    [90, 'last 90s'],
    [60, 'last 1m'],
    [5400, 'last 90m'],
    [7200, 'last 2h'],
    [86_400, 'last 1d'],
    [2_592_000, 'last 30d'],
    [3601, 'last 3601s'],
  ])('scope label of a %i s window: %s', async (windowSeconds, label) => {
    const res = await p.preview({ signal: 'total_runs', comparator: 'lt', window_seconds: windowSeconds });
    expect(res.body.scope_label).toBe(`all agents · ${label}`);
  });

  it.each(['run_cost_usd', 'run_tokens', 'run_duration_ms', 'run_steps', 'loop_detected'])(
    '400 unsupported_signal for per_run %s',
    async (signal) => {
      const res = await p.preview({ signal, comparator: 'gt', threshold: 1 });
      expectError(res, 400, 'unsupported_signal');
      expect(res.body.error.message).toBe('preview works for aggregate signals only');
    },
  );

  it.each([
    ['missing signal', { comparator: 'gt' }, 'signal'],
    ['unknown signal', { signal: 'happiness', comparator: 'gt' }, 'signal'],
    ['missing comparator', { signal: 'total_runs' }, 'comparator'],
    ['unknown comparator', { signal: 'total_runs', comparator: 'ne' }, 'comparator'],
    ['threshold required', { signal: 'avg_tokens', comparator: 'gt' }, 'threshold'],
    ['rate threshold over 1', { signal: 'loop_rate', comparator: 'gt', threshold: 5 }, 'threshold'],
    ['negative threshold', { signal: 'avg_tokens', comparator: 'gt', threshold: -5 }, 'threshold'],
    ['window under 60', { signal: 'total_runs', comparator: 'lt', window_seconds: 59 }, 'window_seconds'],
    ['window over 30 days', { signal: 'total_runs', comparator: 'lt', window_seconds: 2_592_001 }, 'window_seconds'],
    ['negative min_requests', { signal: 'total_runs', comparator: 'lt', min_requests: -1 }, 'min_requests'],
    ['empty agent_name', { signal: 'total_runs', comparator: 'lt', agent_name: '' }, 'agent_name'],
    ['rule fields that are not part of a draft', { signal: 'total_runs', comparator: 'lt', for_seconds: 60 }, ''],
  ])('400 for %s', async (_label, body, path) => {
    const res = await p.preview(body);
    if (path) expectFieldError(res, path);
    else expectError(res, 400, 'validation_failed');
  });
});
