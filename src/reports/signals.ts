// The signal definitions, as SQL: one allow-list of fixed aggregate fragments shared by the reports and the alerts.
//
// Contract section 5. "Runs" are the runs of a window (window-runs.ts); "finished" are those not running.
// Rates are 0 when their denominator is 0; means and percentiles are over finished runs and 0 when none has
// finished. Every fragment is self-contained (it repeats the aggregates it needs; ClickHouse computes an
// aggregate that appears several times once), so any subset of them can be selected together.
import { toClickHouseTime, type ClickHouseStore, type QueryLimits } from '../db/clickhouse';
import { runsOfWindow } from './window-runs';

const RUNS = 'count()';
const FINISHED = 'countIf(run_finished)';
const COMPLETED = 'countIf(run_completed)';
const LOOPS = 'countIf(run_loop)';
const overFinished = (expression: string) => `if(${FINISHED} = 0, 0, ${expression})`;
// Costs are summed as decimals (exact to 1e-12 dollar), so the sum does not depend on the order rows are added
// in: a preview and the summary group the same runs differently and must still agree to the last bit. A run
// cost is capped at 10^14 dollars so that no input, however absurd, can overflow the sum.
const FINISHED_COST = 'toFloat64(sumIf(toDecimal128(least(run_cost, 1e14), 12), run_finished))';
// Distinct names are counted by their 64-bit CityHash: on LowCardinality columns the hash is computed once per
// dictionary entry, and a set of integers is several times cheaper than one of strings (uniqExact hashes strings
// too, with SipHash-128). Two names of a project colliding would take billions of distinct names.
const NAME_HASH = (name: string) => `cityHash64(${name})`;
// quantileExactInclusive interpolates linearly between closest ranks (numpy's default, percentile_cont).
const DURATION_PERCENTILES = 'quantilesExactInclusiveIf(0.5, 0.95, 0.99)(run_duration_ms, run_finished)';

/** Every measure a report or a signal can select, each a fixed SQL aggregate over the runs of a window. */
export const MEASURES = {
  total_runs: RUNS,
  finished_runs: FINISHED,
  completed_runs: COMPLETED,
  loop_runs: LOOPS,
  completion_rate: overFinished(`${COMPLETED} / ${FINISHED}`),
  failure_rate: overFinished(`(${FINISHED} - ${COMPLETED}) / ${FINISHED}`),
  loop_rate: `if(${RUNS} = 0, 0, ${LOOPS} / ${RUNS})`,
  total_cost_usd: FINISHED_COST,
  avg_cost_usd: overFinished(`${FINISHED_COST} / ${FINISHED}`),
  avg_tokens: overFinished(`sumIf(run_tokens, run_finished) / ${FINISHED}`),
  duration_p50_ms: overFinished(`${DURATION_PERCENTILES}[1]`),
  duration_p95_ms: overFinished(`${DURATION_PERCENTILES}[2]`),
  duration_p99_ms: overFinished(`${DURATION_PERCENTILES}[3]`),
  total_steps: 'sum(run_steps)',
  total_tool_calls: 'sum(run_tool_calls)',
  unique_agents: `uniqExact(${NAME_HASH('run_agent')})`,
  unique_tools: `uniqExactArray(arrayMap(tool -> ${NAME_HASH('tool')}, run_tool_names))`,
} as const;
export type Measure = keyof typeof MEASURES;

/** `fragment AS name, …` for a SELECT list; only allow-listed names reach the SQL text. */
export const selectMeasures = (measures: readonly Measure[]): string =>
  measures.map((measure) => `${MEASURES[measure]} AS ${measure}`).join(',\n    ');

export const AGGREGATE_SIGNALS = [
  'total_runs', 'completion_rate', 'failure_rate', 'loop_rate', 'avg_cost_usd', 'total_cost_usd', 'avg_tokens',
  'duration_p50_ms', 'duration_p95_ms', 'duration_p99_ms',
] as const;
export type AggregateSignal = (typeof AGGREGATE_SIGNALS)[number];

/** The set a signal is computed over, whose size is its sample count: every run, or the finished ones. */
export const SIGNAL_SAMPLE: Record<AggregateSignal, 'total_runs' | 'finished_runs'> = {
  total_runs: 'total_runs',
  loop_rate: 'total_runs',
  completion_rate: 'finished_runs',
  failure_rate: 'finished_runs',
  avg_cost_usd: 'finished_runs',
  total_cost_usd: 'finished_runs',
  avg_tokens: 'finished_runs',
  duration_p50_ms: 'finished_runs',
  duration_p95_ms: 'finished_runs',
  duration_p99_ms: 'finished_runs',
};

export interface SignalScope {
  agentName: string | null;
  windowSeconds: number;
}
export interface SignalReading {
  value: number;
  sampleCount: number;
}
export type SignalReadings = Record<AggregateSignal, SignalReading>;

/** A stable key for a scope; JSON keeps any agent name (even one containing separators) unambiguous. */
export const scopeKey = (scope: SignalScope): string => JSON.stringify([scope.agentName, scope.windowSeconds]);

const READING_MEASURES: readonly Measure[] = [...new Set<Measure>(['total_runs', 'finished_runs', ...AGGREGATE_SIGNALS])];

type MeasureRow = Record<Measure, number>;

function toReadings(row: Partial<MeasureRow> | undefined): SignalReadings {
  const readings = {} as SignalReadings;
  for (const signal of AGGREGATE_SIGNALS) {
    readings[signal] = { value: Number(row?.[signal] ?? 0), sampleCount: Number(row?.[SIGNAL_SAMPLE[signal]] ?? 0) };
  }
  return readings;
}

/**
 * Every scope's signals in one scan of [at − longest window, at). Each run is counted once per distinct window
 * it falls in (ARRAY JOIN over the window starts), then grouped per window for all agents, per window and
 * agent, or both (GROUPING SETS) — whichever the scopes need; with agent scopes only, only their agents' runs
 * are read. The work grows with the runs and the number of distinct windows, not with the number of scopes,
 * so hundreds of rules over a few window lengths cost about as much as one.
 */
const SCOPE_GROUPINGS = {
  all: { where: '', groupBy: 'GROUP BY window_index', allAgents: 'true' },
  agents: { where: 'WHERE run_agent IN {scope_agents:Array(String)}', groupBy: 'GROUP BY window_index, run_agent', allAgents: 'false' },
  both: { where: '', groupBy: 'GROUP BY GROUPING SETS ((window_index, run_agent), (window_index))', allAgents: 'grouping(run_agent) = 1' },
} as const;

const selectScopedSignals = (grouping: keyof typeof SCOPE_GROUPINGS) => `
  SELECT window_index, ${SCOPE_GROUPINGS[grouping].allAgents} AS all_agents, ${grouping === 'all' ? "''" : 'run_agent'} AS agent_name,
    ${selectMeasures(READING_MEASURES)}
  FROM (${runsOfWindow()})
  ARRAY JOIN arrayFilter(
    i -> run_timestamp >= {window_starts:Array(DateTime64(3, 'UTC'))}[i],
    range(1, length({window_starts:Array(DateTime64(3, 'UTC'))}) + 1)) AS window_index
  ${SCOPE_GROUPINGS[grouping].where}
  ${SCOPE_GROUPINGS[grouping].groupBy}`;

type ScopedRow = MeasureRow & { window_index: number; all_agents: number | boolean; agent_name: string };

export function signalReader(ch: ClickHouseStore, limits: QueryLimits) {
  return {
    /** Each scope's signals over [at − windowSeconds, at) for one project, keyed by scopeKey; scopes without runs read 0. */
    async readSignals(projectId: string, scopes: readonly SignalScope[], at: Date): Promise<Map<string, SignalReadings>> {
      const readings = new Map<string, SignalReadings>();
      if (scopes.length === 0) return readings;
      for (const scope of scopes) {
        if (!Number.isInteger(scope.windowSeconds) || scope.windowSeconds <= 0) throw new RangeError(`windowSeconds must be a positive integer: ${scope.windowSeconds}`);
      }
      const windows = [...new Set(scopes.map((scope) => scope.windowSeconds))].sort((a, b) => a - b);
      const startOf = (seconds: number) => toClickHouseTime(new Date(at.getTime() - seconds * 1000));
      const agents = [...new Set(scopes.flatMap((scope) => (scope.agentName === null ? [] : [scope.agentName])))];
      const anyAllAgents = scopes.some((scope) => scope.agentName === null);
      const grouping = agents.length === 0 ? 'all' : anyAllAgents ? 'both' : 'agents';
      const rows = await ch.query<ScopedRow>({
        name: `signals.scoped_${grouping}`,
        sql: selectScopedSignals(grouping),
        params: {
          project_id: projectId,
          window_start: startOf(windows[windows.length - 1]),
          window_end: toClickHouseTime(at),
          window_starts: windows.map(startOf),
          ...(grouping === 'agents' ? { scope_agents: agents } : {}),
        },
        limits,
      });
      const found = new Map<string, ScopedRow>();
      for (const row of rows) {
        const agentName = row.all_agents === true || row.all_agents === 1 ? null : row.agent_name;
        found.set(scopeKey({ agentName, windowSeconds: windows[row.window_index - 1] }), row);
      }
      for (const scope of scopes) readings.set(scopeKey(scope), toReadings(found.get(scopeKey(scope))));
      return readings;
    },
  };
}
