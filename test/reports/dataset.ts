// A known set of runs for the report tests, how to load it through the real ingest API, and the expected
// reports computed from it in plain TypeScript (independently of the service's SQL).
import type { TestApp } from '../support/app';
import { bearer } from '../support/fixtures';

export const MINUTE = 60_000;
export const HOUR = 3_600_000;
export const DAY = 86_400_000;

export type Status = 'running' | 'completed' | 'failed' | 'cancelled' | 'timed_out' | 'abandoned';

export interface StepSpec {
  index: number;
  type: 'llm' | 'tool' | 'retrieval' | 'other';
  tool_name?: string;
  input?: string;
  output?: string;
  tokens?: number;
  cost_usd?: number;
  error?: string;
}

export interface RunSpec {
  agent: string;
  id: string;
  start: Date;
  status: Status;
  /** Finished runs: when they finished. An abandoned run: the instant of the abandon pass. */
  finishedAt: Date | null;
  /** batch: one whole run in a batch call; stream: start, steps, finish; running runs are always streamed. */
  via: 'batch' | 'stream';
  steps: StepSpec[];
  /** The loop the steps contain (4 identical tool calls), as the expected loop_step_index. */
  loopStepIndex: number | null;
  input: string;
  output: string;
  metadata: number[];
  totalCostOverride?: number;
  totalTokensOverride?: number;
  terminationDetail?: string;
}

// A small deterministic generator, so the data set is the same on every run.
function generator(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    integer: (min: number, max: number) => min + Math.floor(next() * (max - min + 1)),
    pick: <T>(items: readonly T[]) => items[Math.floor(next() * items.length)],
  };
}

const hex = (n: number, width: number) => n.toString(16).padStart(width, '0');
let idCounter = 0;
/** Fresh ids whose string order differs from ClickHouse's UUID order (which compares the second half first). */
export function nextId(random: () => number): string {
  idCounter += 1;
  // Drawn in this order, so that a seed always gives the same ids.
  const high = hex(Math.floor(random() * 0xffffffff), 8);
  const version4 = hex(Math.floor(random() * 0xfff), 3);
  const variant8 = hex(Math.floor(random() * 0xfff), 3);
  const node = hex(Math.floor(random() * 0xffffffffffff), 12);
  return `${high}-${hex(idCounter, 4)}-4${version4}-8${variant8}-${node}`;
}

// Tool names as sent: "search" and "Search" are two tools.
const TOOLS = ['search', 'Search', 'read_file', 'write_file', 'run_tests', 'browse'];

/** Steps with unique inputs and outputs (so no loop rule can match by accident), optionally with a 4-step loop. */
function makeSteps(
  label: string,
  count: number,
  withLoop: boolean,
  random: ReturnType<typeof generator>,
): { steps: StepSpec[]; loopStepIndex: number | null } {
  const steps: StepSpec[] = [];
  let loopStepIndex: number | null = null;
  const loopAt = withLoop ? random.integer(0, Math.max(0, count - 4)) : -1;
  for (let index = 0; index < count; index += 1) {
    if (index === loopAt) {
      loopStepIndex = index;
      for (let repeat = 0; repeat < 4; repeat += 1) {
        steps.push({
          index: index + repeat,
          type: 'tool',
          tool_name: 'search',
          input: '{"q":"same"}',
          output: 'same result',
          tokens: 10,
          cost_usd: 0.0001,
        });
      }
      index += 3;
      continue;
    }
    const type = random.pick(['llm', 'llm', 'tool', 'tool', 'retrieval', 'other'] as const);
    const step: StepSpec = { index, type, input: `${label} input ${index}`, output: `${label} output ${index}` };
    if (type === 'tool') step.tool_name = random.pick(TOOLS);
    if (type === 'llm') {
      step.tokens = random.integer(50, 3000);
      step.cost_usd = random.integer(1, 5000) / 100_000;
    }
    steps.push(step);
  }
  return { steps, loopStepIndex };
}

/** The data set, relative to `now` (T): current window [T − 1 day, T), previous [T − 2 days, T − 1 day). */
export function buildDataset(now: Date): RunSpec[] {
  const random = generator(20261121);
  const T = now.getTime();
  const runs: RunSpec[] = [];
  const finishedStatuses: Status[] = [
    'completed',
    'completed',
    'completed',
    'failed',
    'completed',
    'cancelled',
    'completed',
    'timed_out',
  ];
  let serial = 0;

  function add(
    agent: string,
    startMs: number,
    status: Status,
    options: Partial<RunSpec> & { stepCount?: number; loop?: boolean; durationMs?: number } = {},
  ) {
    serial += 1;
    const label = `${agent}#${serial}`;
    const { steps, loopStepIndex } = makeSteps(
      label,
      options.stepCount ?? random.integer(0, 9),
      options.loop ?? false,
      random,
    );
    const finished = status !== 'running' && status !== 'abandoned';
    const durationMs = options.durationMs ?? random.integer(100, 600_000);
    const run: RunSpec = {
      agent,
      id: options.id ?? nextId(random.next),
      start: new Date(startMs),
      status,
      finishedAt: finished ? new Date(startMs + durationMs) : status === 'abandoned' ? now : null,
      // Starts older than the abandon cut-off (a day) are refused by the start call: such runs come whole, in a batch.
      via:
        status === 'running' || status === 'abandoned'
          ? 'stream'
          : T - startMs > DAY - HOUR
            ? 'batch'
            : (options.via ?? (serial % 2 === 0 ? 'batch' : 'stream')),
      steps,
      loopStepIndex,
      input: `input of ${label}`,
      output: finished ? `output of ${label}` : '',
      metadata: serial % 3 === 0 ? [serial, 0.5] : [],
      ...(options.totalCostOverride !== undefined ? { totalCostOverride: options.totalCostOverride } : {}),
      ...(options.totalTokensOverride !== undefined ? { totalTokensOverride: options.totalTokensOverride } : {}),
      ...(options.terminationDetail !== undefined ? { terminationDetail: options.terminationDetail } : {}),
    };
    runs.push(run);
    return run;
  }

  // Current window: three active agents, an upper-case one (sorts first by code points), loops, a tie group.
  const currentAgents: [string, number][] = [
    ['planner', 12],
    ['coder', 8],
    ['reviewer', 5],
    ['Zeta', 3],
  ];
  for (const [agent, count] of currentAgents) {
    for (let i = 0; i < count; i += 1) {
      add(
        agent,
        T - random.integer(2 * HOUR, DAY - HOUR),
        finishedStatuses[(i + agent.length) % finishedStatuses.length],
        { loop: i % 5 === 1 },
      );
    }
  }
  add('planner', T - 90 * MINUTE, 'completed', {
    via: 'batch',
    totalCostOverride: 1.25,
    totalTokensOverride: 99_999,
    terminationDetail: 'done early',
  });
  // Equal start times: ordered by the ids' strings, which ClickHouse's UUID order would reverse.
  const tie = T - 5 * HOUR;
  add('coder', tie, 'completed', { id: 'ffffffff-0000-4000-8000-000000000001' });
  add('coder', tie, 'failed', { id: '00000000-0000-4000-8000-ffffffffffff' });
  add('coder', tie, 'completed', { id: '80000000-0000-4000-8000-800000000000', loop: true, stepCount: 6 });
  // Edge instants: `from` is included, `to` excluded (in both windows).
  add('planner', T - DAY, 'completed', { via: 'batch' });
  add('reviewer', T - 1, 'completed', { via: 'stream', durationMs: 1 });
  add('planner', T, 'completed', { via: 'batch' });
  // Whole hours come from the hourly rollups, the rest from raw rows: a run exactly on an hour, and one just before.
  const wholeHour = Math.floor(T / HOUR) * HOUR - 6 * HOUR;
  add('reviewer', wholeHour, 'completed', { stepCount: 5 });
  add('reviewer', wholeHour - 1, 'failed', { stepCount: 2 });
  // Running runs of the last minutes (one already looping, one without steps) and one left to be abandoned.
  add('planner', T - 10 * MINUTE, 'running', { stepCount: 7, loop: true });
  add('planner', T - 30 * MINUTE, 'running', { stepCount: 3 });
  add('coder', T - 5 * MINUTE, 'running', { stepCount: 0 });
  add('planner', T - 3 * HOUR, 'abandoned', { stepCount: 4 });

  // Previous window: an agent that has stopped since ("retired"), and its own edges.
  const previousAgents: [string, number][] = [
    ['planner', 6],
    ['coder', 4],
    ['retired', 3],
  ];
  for (const [agent, count] of previousAgents) {
    for (let i = 0; i < count; i += 1) {
      add(agent, T - DAY - random.integer(HOUR, DAY - HOUR), finishedStatuses[(i + 3) % finishedStatuses.length], {
        loop: i === 2,
      });
    }
  }
  add('coder', T - 2 * DAY, 'failed');
  add('planner', T - DAY - 1, 'completed', { via: 'batch' });
  add('planner', T - 2 * DAY - 1, 'completed', { via: 'batch' });
  // Loaded after the abandon pass, so it stays running though it is older than the pass's cut-off (an hour).
  add('reviewer', T - 20 * HOUR, 'running', { stepCount: 2 });
  return runs;
}

const iso = (date: Date) => date.toISOString();

function startBody(run: RunSpec) {
  return { agent_name: run.agent, id: run.id, timestamp: iso(run.start), input: run.input, metadata: run.metadata };
}

function finishFields(run: RunSpec, steps: StepSpec[]) {
  return {
    status: run.status,
    finished_at: iso(run.finishedAt!),
    output: run.output,
    steps,
    ...(run.totalCostOverride !== undefined ? { total_cost_usd: run.totalCostOverride } : {}),
    ...(run.totalTokensOverride !== undefined ? { total_tokens: run.totalTokensOverride } : {}),
    ...(run.terminationDetail !== undefined ? { termination_detail: run.terminationDetail } : {}),
  };
}

/** Loads the runs through the ingest endpoints and the ingest's abandon pass, which runs at `now` (the app's clock). */
export async function loadDataset(app: TestApp, key: string, runs: readonly RunSpec[], now: Date): Promise<void> {
  const auth = bearer(key);
  const post = async (path: string, body: object, status = 200) => {
    const res = await app.http.post(path).set(auth).send(body);
    if (res.status !== status) throw new Error(`${path}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  };
  const stream = async (run: RunSpec) => {
    await post('/ingest/agent/runs', startBody(run), 201);
    const firstCall =
      run.status === 'running' || run.status === 'abandoned'
        ? run.steps
        : run.steps.slice(0, Math.ceil(run.steps.length / 2));
    // Steps in two calls when there are enough, to exercise several live versions.
    const half = Math.ceil(firstCall.length / 2);
    for (const part of [firstCall.slice(0, half), firstCall.slice(half)]) {
      if (part.length > 0) await post(`/ingest/agent/runs/${run.id}/steps`, { timestamp: iso(run.start), steps: part });
    }
    if (run.status !== 'running' && run.status !== 'abandoned') {
      await post(`/ingest/agent/runs/${run.id}/finish`, {
        timestamp: iso(run.start),
        ...finishFields(run, run.steps.slice(firstCall.length)),
      });
    }
  };

  const lateRunning = runs.filter((run) => run.status === 'running' && now.getTime() - run.start.getTime() > HOUR);
  const batch = runs.filter((run) => run.via === 'batch');
  const streamed = runs.filter((run) => run.via === 'stream' && !lateRunning.includes(run));

  const results = await post('/ingest/agent/runs/batch', {
    runs: batch.map((run) => ({ ...startBody(run), ...finishFields(run, run.steps) })),
  });
  for (const result of results.results)
    if ('error' in result) throw new Error(`batch item failed: ${JSON.stringify(result)}`);
  for (const run of streamed) await stream(run);
  // Everything still live and older than an hour becomes abandoned, at `now`.
  await app.ingest.abandonStaleRuns(3600);
  for (const run of lateRunning) await stream(run);
}

// ---- Expected values, computed here from the specs ----

export interface ExpectedRun {
  id: string;
  project_id: string;
  agent_name: string;
  status: Status;
  timestamp: string;
  finished_at: string | null;
  duration_ms: number | null;
  input: string;
  output: string;
  loop_detected: boolean;
  loop_step_index: number | null;
  termination_reason: string | null;
  termination_detail: string | null;
  total_steps: number;
  total_tokens: number;
  total_cost_usd: number;
  metadata: number[];
  session_id: null;
  user_id: null;
  tags: string[];
}

const TERMINATION: Record<Status, string | null> = {
  running: null,
  completed: 'completed',
  failed: 'error',
  cancelled: 'cancelled',
  timed_out: 'timeout',
  abandoned: 'abandoned',
};

const sum = (values: readonly number[]) => values.reduce((total, value) => total + value, 0);
export const toolSteps = (run: RunSpec) => run.steps.filter((step) => step.type === 'tool');
export const totalTokens = (run: RunSpec) => run.totalTokensOverride ?? sum(run.steps.map((step) => step.tokens ?? 0));
export const totalCost = (run: RunSpec) => run.totalCostOverride ?? sum(run.steps.map((step) => step.cost_usd ?? 0));
export const isFinished = (run: RunSpec) => run.status !== 'running';
export const durationOf = (run: RunSpec) => run.finishedAt!.getTime() - run.start.getTime();

export function expectedRun(run: RunSpec, projectId: string): ExpectedRun {
  return {
    id: run.id,
    project_id: projectId,
    agent_name: run.agent,
    status: run.status,
    timestamp: iso(run.start),
    finished_at: run.finishedAt ? iso(run.finishedAt) : null,
    duration_ms: run.finishedAt ? durationOf(run) : null,
    input: run.input,
    output: run.output,
    loop_detected: run.loopStepIndex !== null,
    loop_step_index: run.loopStepIndex,
    termination_reason: TERMINATION[run.status],
    termination_detail: run.terminationDetail ?? null,
    total_steps: run.steps.length,
    total_tokens: totalTokens(run),
    total_cost_usd: totalCost(run),
    metadata: run.metadata,
    session_id: null,
    user_id: null,
    tags: [],
  };
}

export const inWindow = (runs: readonly RunSpec[], from: Date, to: Date) =>
  runs.filter((run) => run.start.getTime() >= from.getTime() && run.start.getTime() < to.getTime());

/** Newest first, then by the id's string, descending. */
export const byListOrder = (a: RunSpec, b: RunSpec) =>
  b.start.getTime() - a.start.getTime() || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);

/** Linear interpolation between closest ranks (numpy's default, percentile_cont). */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = (sorted.length - 1) * p;
  const low = Math.floor(rank);
  const high = Math.min(low + 1, sorted.length - 1);
  return sorted[low] + (rank - low) * (sorted[high] - sorted[low]);
}

const ratio = (part: number, whole: number) => (whole === 0 ? 0 : part / whole);

export function expectedSummary(runs: readonly RunSpec[]) {
  const finished = runs.filter(isFinished);
  const completed = runs.filter((run) => run.status === 'completed').length;
  const loops = runs.filter((run) => run.loopStepIndex !== null).length;
  const durations = finished.map(durationOf);
  return {
    total_runs: runs.length,
    completed_runs: completed,
    completion_rate: ratio(completed, finished.length),
    loop_runs: loops,
    loop_rate: ratio(loops, runs.length),
    avg_cost_usd: ratio(sum(finished.map(totalCost)), finished.length),
    avg_tokens: ratio(sum(finished.map(totalTokens)), finished.length),
    duration_p50_ms: percentile(durations, 0.5),
    duration_p95_ms: percentile(durations, 0.95),
    duration_p99_ms: percentile(durations, 0.99),
    total_steps: sum(runs.map((run) => run.steps.length)),
    total_tool_calls: sum(runs.map((run) => toolSteps(run).length)),
    unique_agents: new Set(runs.map((run) => run.agent)).size,
    unique_tools: new Set(runs.flatMap((run) => toolSteps(run).map((step) => step.tool_name))).size,
  };
}

/** Agent names by code points (the byte order of their UTF-8). */
const byCodePoints = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));

export function expectedHealth(runs: readonly RunSpec[], from: Date, to: Date) {
  const previousFrom = new Date(from.getTime() - (to.getTime() - from.getTime()));
  const current = inWindow(runs, from, to);
  const previous = inWindow(runs, previousFrom, from);
  const agents = [...new Set([...current, ...previous].map((run) => run.agent))];
  return agents
    .map((agent) => {
      const summary = expectedSummary(current.filter((run) => run.agent === agent));
      return {
        agent_name: agent,
        total_runs: summary.total_runs,
        prev_total_runs: previous.filter((run) => run.agent === agent).length,
        completed_runs: summary.completed_runs,
        completion_rate: summary.completion_rate,
        loop_runs: summary.loop_runs,
        loop_rate: summary.loop_rate,
        avg_cost_usd: summary.avg_cost_usd,
        avg_tokens: summary.avg_tokens,
      };
    })
    .sort((a, b) => b.total_runs - a.total_runs || byCodePoints(a.agent_name, b.agent_name));
}

/** Every aggregate signal of a set of runs, with its sample count (contract sections 5 and 7). */
export function expectedSignals(runs: readonly RunSpec[]) {
  const summary = expectedSummary(runs);
  const finished = runs.filter(isFinished);
  const f = finished.length;
  return {
    total_runs: { value: runs.length, sampleCount: runs.length },
    completion_rate: { value: summary.completion_rate, sampleCount: f },
    failure_rate: { value: ratio(f - summary.completed_runs, f), sampleCount: f },
    loop_rate: { value: summary.loop_rate, sampleCount: runs.length },
    avg_cost_usd: { value: summary.avg_cost_usd, sampleCount: f },
    total_cost_usd: { value: sum(finished.map(totalCost)), sampleCount: f },
    avg_tokens: { value: summary.avg_tokens, sampleCount: f },
    duration_p50_ms: { value: summary.duration_p50_ms, sampleCount: f },
    duration_p95_ms: { value: summary.duration_p95_ms, sampleCount: f },
    duration_p99_ms: { value: summary.duration_p99_ms, sampleCount: f },
  };
}

/** Numbers compared to 9 decimals (sums of fractional costs depend on the order of addition). */
export function approximately<T>(value: T): T {
  if (typeof value === 'number') return expect.closeTo(value, 9) as unknown as T;
  if (Array.isArray(value)) return value.map(approximately) as unknown as T;
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, approximately(inner)])) as T;
  }
  return value;
}
