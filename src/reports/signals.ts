// The signal definitions, as SQL: one allow-list of fixed fragments shared by the reports and the alerts.
//
// Contract section 5. "Runs" are the runs of a window (window-runs.ts); "finished" are those not running.
// Rates are 0 when their denominator is 0; means and percentiles are over finished runs and 0 when none has
// finished. A measure is an expression over partial aggregates (counts, exact sums, sets), which the reports
// gather from hourly rollups and raw rows and the alert reader from raw rows alone: since the partials are
// exact, both paths give the same value to the last bit.
import { sql, whereAll } from './sql';
import { RAW_ONLY, runsOfWindow } from './window-runs';

/**
 * Partial aggregates: counts, exact sums and sets of names, which add up across any split of the runs. Each has
 * a raw form, over the rows of `runsOfWindow` (window-runs.ts), and a rollup form, over the finished rows of
 * `runs` under the column aliases of rollups.ts: ClickHouse answers the rollup forms from the hourly projection
 * of `runs`, whose aggregates are these expressions (schema/clickhouse/0002_run_rollups.sql).
 */
interface PartialDefinition {
  /** Absent for the duration percentiles, which selectPartials computes from their levels. */
  raw?: string;
  /** Absent for the duration percentiles: exact percentiles need every value, they cannot be rolled up. */
  rollup?: string;
  /** How the parts of one group, from rollups and raw rows, are put together. */
  combine?: 'sum' | 'groupUniqArrayArray';
  /** A duration percentile's level: the levels asked for are computed by one aggregate (see selectPartials). */
  level?: number;
}

// Costs are summed as decimals (exact to 1e-12 dollar), so the sum does not depend on the order rows are added
// in: a preview and the summary group the same runs differently and must still agree to the last bit. A run
// cost is capped at 10^14 dollars so that no input, however absurd, can overflow the sum.
const RUN_COST = 'toDecimal128(least(run_cost, 1e14), 12)';

export const PARTIALS = {
  // Rollups hold finished runs only: the running ones are always read raw, from live_runs.
  runs: { raw: 'count()', rollup: 'count()', combine: 'sum' },
  finished: { raw: 'countIf(run_finished)', rollup: 'count()', combine: 'sum' },
  completed: { raw: 'countIf(run_completed)', rollup: 'countIf(run_completed)', combine: 'sum' },
  loops: { raw: 'countIf(run_loop)', rollup: 'countIf(run_loop)', combine: 'sum' },
  cost: { raw: `sumIf(${RUN_COST}, run_finished)`, rollup: `sum(${RUN_COST})`, combine: 'sum' },
  tokens: { raw: 'sumIf(run_tokens, run_finished)', rollup: 'sum(run_tokens)', combine: 'sum' },
  steps: { raw: 'sum(run_steps)', rollup: 'sum(run_steps)', combine: 'sum' },
  tool_calls: { raw: 'sum(run_tool_calls)', rollup: 'sum(run_tool_calls)', combine: 'sum' },
  agent_names: {
    raw: 'groupUniqArray(run_agent)',
    rollup: 'groupUniqArray(run_agent)',
    combine: 'groupUniqArrayArray',
  },
  tool_names: {
    raw: 'groupUniqArrayArray(run_tool_names)',
    rollup: 'groupUniqArrayArray(run_tool_names)',
    combine: 'groupUniqArrayArray',
  },
  // quantileExactInclusive interpolates linearly between closest ranks (numpy's default, percentile_cont).
  duration_p50: { level: 0.5 },
  duration_p95: { level: 0.95 },
  duration_p99: { level: 0.99 },
} as const satisfies Record<string, PartialDefinition>;
export type PartialAggregate = keyof typeof PARTIALS;
export type RollupPartial = {
  [P in PartialAggregate]: (typeof PARTIALS)[P] extends { rollup: string } ? P : never;
}[PartialAggregate];

/** A partial's column name in the queries: `p_<name>`. */
const column = (partial: PartialAggregate) => `p_${partial}`;

export const isPercentile = (partial: PartialAggregate): boolean =>
  (PARTIALS[partial] as PartialDefinition).level !== undefined;

/**
 * The percentiles asked for, from one aggregate over the durations of just their levels: one percentile (a
 * preview's) sorts less than three, and a level's value does not depend on the others computed beside it.
 */
function selectPercentiles(percentiles: readonly PartialAggregate[]): string[] {
  if (percentiles.length === 0) return [];
  const levels = percentiles.map((partial) => (PARTIALS[partial] as PartialDefinition).level).join(', ');
  return [
    `quantilesExactInclusiveIf(${levels})(run_duration_ms, run_finished) AS p_durations`,
    ...percentiles.map((partial, i) => `p_durations[${i + 1}] AS ${column(partial)}`),
  ];
}

/** `fragment AS p_name`, a line each: the partials of one source (raw rows or rollup rows). */
export function selectPartials(partials: readonly PartialAggregate[], source: 'raw' | 'rollup'): string {
  const others = partials
    .filter((partial) => !isPercentile(partial))
    .map((partial) => `${(PARTIALS[partial] as PartialDefinition)[source]} AS ${column(partial)}`);
  return [...others, ...selectPercentiles(partials.filter(isPercentile))].join(',\n');
}

/** `sum(p_runs) AS p_runs`, a line each: the parts of one group put together. */
export const combinePartials = (partials: readonly RollupPartial[]): string =>
  partials.map((partial) => `${PARTIALS[partial].combine}(${column(partial)}) AS ${column(partial)}`).join(',\n');

interface MeasureDefinition {
  sql: string;
  uses: readonly PartialAggregate[];
}
const measure = (sql: string, ...uses: PartialAggregate[]): MeasureDefinition => ({ sql, uses });
const overFinished = (expression: string, ...uses: PartialAggregate[]) =>
  measure(`if(p_finished = 0, 0, ${expression})`, 'finished', ...uses);

/** Every measure a report or a signal can select: a fixed SQL expression over the partials of a group. */
export const MEASURES = {
  total_runs: measure('p_runs', 'runs'),
  finished_runs: measure('p_finished', 'finished'),
  completed_runs: measure('p_completed', 'completed'),
  loop_runs: measure('p_loops', 'loops'),
  completion_rate: overFinished('p_completed / p_finished', 'completed'),
  failure_rate: overFinished('(p_finished - p_completed) / p_finished', 'completed'),
  loop_rate: measure('if(p_runs = 0, 0, p_loops / p_runs)', 'runs', 'loops'),
  total_cost_usd: measure('toFloat64(p_cost)', 'cost'),
  avg_cost_usd: overFinished('toFloat64(p_cost) / p_finished', 'cost'),
  avg_tokens: overFinished('p_tokens / p_finished', 'tokens'),
  total_tokens: measure('p_tokens', 'tokens'),
  duration_p50_ms: overFinished('p_duration_p50', 'duration_p50'),
  duration_p95_ms: overFinished('p_duration_p95', 'duration_p95'),
  duration_p99_ms: overFinished('p_duration_p99', 'duration_p99'),
  total_steps: measure('p_steps', 'steps'),
  total_tool_calls: measure('p_tool_calls', 'tool_calls'),
  unique_agents: measure('length(p_agent_names)', 'agent_names'),
  unique_tools: measure('length(p_tool_names)', 'tool_names'),
} as const satisfies Record<string, MeasureDefinition>;
export type Measure = keyof typeof MEASURES;

/** The partials the measures are computed from. */
export const partialsOf = (measures: readonly Measure[]): PartialAggregate[] => [
  ...new Set(measures.flatMap((name) => MEASURES[name].uses)),
];

/** The level of a duration percentile measure (0.95 for duration_p95_ms); undefined for every other measure. */
export const percentileLevel = (measure: Measure): number | undefined =>
  MEASURES[measure].uses.map((partial) => (PARTIALS[partial] as PartialDefinition).level).find((level) => level);

/** `expression AS name`, a line each, for a SELECT list over partials; only allow-listed names reach the SQL text. */
export const selectMeasures = (measures: readonly Measure[]): string =>
  measures.map((name) => `${MEASURES[name].sql} AS ${name}`).join(',\n');

export const AGGREGATE_SIGNALS = [
  'total_runs',
  'completion_rate',
  'failure_rate',
  'loop_rate',
  'avg_cost_usd',
  'total_cost_usd',
  'avg_tokens',
  'duration_p50_ms',
  'duration_p95_ms',
  'duration_p99_ms',
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
  /** One user's runs (contract §10); absent or null: every user's. */
  userId?: string | null;
  windowSeconds: number;
}
export interface SignalReading {
  value: number;
  sampleCount: number;
}
export type SignalReadings = Record<AggregateSignal, SignalReading>;

/** A stable key for a scope; JSON keeps any agent name (even one containing separators) unambiguous. */
export const scopeKey = (scope: SignalScope): string =>
  JSON.stringify([scope.agentName, scope.windowSeconds, ...(scope.userId ? [scope.userId] : [])]);

export const READING_MEASURES: readonly Measure[] = [
  ...new Set<Measure>(['total_runs', 'finished_runs', ...AGGREGATE_SIGNALS]),
];

type MeasureRow = Record<Measure, number>;

/** A scope's readings from its row of measures (READING_MEASURES); a scope without runs reads 0. */
export function toReadings(row: Partial<MeasureRow> | undefined): SignalReadings {
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
  all: { where: '', groupBy: 'GROUP BY window_index', allAgents: 'true', agentName: "''" },
  agents: {
    where: 'run_agent IN {scope_agents:Array(String)}',
    groupBy: 'GROUP BY window_index, run_agent',
    allAgents: 'false',
    agentName: 'run_agent',
  },
  both: {
    where: '',
    groupBy: 'GROUP BY GROUPING SETS ((window_index, run_agent), (window_index))',
    allAgents: 'grouping(run_agent) = 1',
    agentName: 'run_agent',
  },
} as const;

/** Scopes of one user read only that user's runs (a fixed fragment, over the runs of the window). */
const OF_USER = 'run_user = {user_id:String}';

export function selectScopedSignals(grouping: keyof typeof SCOPE_GROUPINGS, ofUser = false): string {
  const { groupBy, allAgents, agentName } = SCOPE_GROUPINGS[grouping];
  const where = whereAll([SCOPE_GROUPINGS[grouping].where, ofUser ? OF_USER : ''].filter(Boolean));
  return sql`
    SELECT window_index, all_agents, agent_name,
      ${selectMeasures(READING_MEASURES)}
    FROM (
      SELECT window_index, ${allAgents} AS all_agents, ${agentName} AS agent_name,
        ${selectPartials(partialsOf(READING_MEASURES), 'raw')}
      FROM (
        ${runsOfWindow()}
      )
      ARRAY JOIN arrayFilter(
        i -> run_timestamp >= {window_starts:Array(DateTime64(3, 'UTC'))}[i],
        range(1, length({window_starts:Array(DateTime64(3, 'UTC'))}) + 1)) AS window_index
      ${where}
      ${groupBy})
    ${RAW_ONLY}`;
}
