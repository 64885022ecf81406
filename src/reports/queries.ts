// SQL of the report endpoints: summary, health and time series (and the alert preview, which is the summary's
// statement over one window), and the run list. Values are always bound parameters; the only variable SQL text is
// picked from fixed, allow-listed fragments (measures, filters, bucket sizes). Every statement as ClickHouse
// receives it is in test/reports/golden.
import { AS_ROLLUP_COLUMNS, fromProjection, IN_WHOLE_HOURS, OUTSIDE_WHOLE_HOURS, type ReportShape } from './rollups';
import {
  combinePartials,
  isPercentile,
  MEASURES,
  partialsOf,
  selectMeasures,
  selectPartials,
  type Measure,
  type PartialAggregate,
  type RollupPartial,
} from './signals';
import { keyColumns, keyNames, readsAgent, type GroupKeys } from './durations';
import { andEach, sql, whereAll } from './sql';
import { finishedRunsOfWindow, RAW_ONLY, runsOfWindow, timeParam } from './window-runs';

export const HEALTH_MEASURES = [
  'total_runs',
  'completed_runs',
  'completion_rate',
  'loop_runs',
  'loop_rate',
  'avg_cost_usd',
  'avg_tokens',
] as const satisfies readonly Measure[];

/** The summary's measures: health's, then the duration percentiles and what runs did. */
export const SUMMARY_MEASURES = [
  ...HEALTH_MEASURES,
  'duration_p50_ms',
  'duration_p95_ms',
  'duration_p99_ms',
  'total_steps',
  'total_tool_calls',
  'unique_agents',
  'unique_tools',
] as const satisfies readonly Measure[];

/**
 * The summary's filters: fixed fragments over the runs of a window (and the rollup rows), picked by name. `agents`
 * is the alert reader's: the agents of a round's scopes.
 */
export const SUMMARY_FILTERS = {
  agent_name: 'run_agent = {agent_name:String}',
  agents: 'run_agent IN {agents:Array(String)}',
  user_id: 'run_user = {user_id:String}',
} as const;
export type SummaryFilter = keyof typeof SUMMARY_FILTERS;
/** Filters the rollups have no dimension for (contract §10: a user): a report with one reads raw rows. */
export const RAW_ONLY_FILTERS: readonly SummaryFilter[] = ['user_id'];

// ── Aggregate reports ──────────────────────────────────────────────────────────────────────────────────────────
// Summary, health, time series and the preview select measures (signals.ts) per group: the window (`is_current`),
// the agent, the time bucket. A measure is an expression over partial aggregates (counts, exact sums, name sets),
// which add up across any split of the runs; so the partials of a group may come from one pass over the raw rows
// (partialsOver), or from the hourly projection for the whole hours plus raw rows for the rest (rollupPartials).
// Exact percentiles cannot be summed up: they come from one pass over the finished rows, or with rollups from the
// duration projections, in two steps of their own (durations.ts).

/** Conditions over the run_* columns (SUMMARY_FILTERS' fragments). */
type Filters = readonly string[];

const rolledUp = (partial: PartialAggregate): partial is RollupPartial => !isPercentile(partial);

/** The partials per group in one pass over some runs (window-runs.ts), of those matching `filters`. */
const partialsOver = (runs: string, keys: GroupKeys, partials: readonly PartialAggregate[], filters: Filters) => sql`
  SELECT ${keyColumns(keys)},
    ${selectPartials(partials, 'raw')}
  FROM (
    ${runs}
  ) ${whereAll(filters)}
  GROUP BY ${keyNames(keys)}`;

/**
 * The partials per group from the hourly projection of `runs` for the windows' whole hours, added up with one pass
 * over the rest: the finished runs of the partial hours at the windows' edges, and the running runs. The first
 * SELECT's aggregates are the projection's own expressions, which is what lets ClickHouse answer it from there; it
 * is a subquery of its own because a WITH at the head of a UNION would define its aliases for every SELECT of it.
 */
const rollupPartials = (keys: GroupKeys, partials: readonly RollupPartial[], filters: Filters) => sql`
  SELECT ${keyNames(keys)},
    ${combinePartials(partials)}
  FROM (
    SELECT * FROM (
      ${AS_ROLLUP_COLUMNS}
      SELECT ${keyColumns(keys)},
        ${selectPartials(partials, 'rollup')}
      FROM runs
      WHERE ${IN_WHOLE_HOURS}${andEach(filters)}
      GROUP BY ${keyNames(keys)}
      ${fromProjection(readsAgent(keys, filters) ? 'hourly' : 'hourly_all_agents')})
    UNION ALL
    SELECT * FROM (
      ${partialsOver(runsOfWindow([OUTSIDE_WHOLE_HOURS]), keys, partials, filters)}))
  GROUP BY ${keyNames(keys)}`;

/** The partials of the measures per group, over the runs of both windows; with rollups, without the percentiles. */
const partialsPerGroup = (keys: GroupKeys, measures: readonly Measure[], filters: Filters, shape: ReportShape) =>
  shape === 'raw'
    ? partialsOver(runsOfWindow(), keys, partialsOf(measures), filters)
    : rollupPartials(keys, partialsOf(measures).filter(rolledUp), filters);

/**
 * What the measures per group are selected from: their partials (rollups hold no percentiles: with rollups, the
 * percentiles come from durations.ts, read beside this statement).
 */
function measuresSource(keys: GroupKeys, measures: readonly Measure[], filters: Filters, shape: ReportShape) {
  const percentiles = partialsOf(measures).filter(isPercentile);
  const finishedOnly = partialsOf(measures).every((partial) => isPercentile(partial) || partial === 'finished');
  if (shape === 'raw' && percentiles.length > 0 && finishedOnly) {
    // Percentiles over the finished runs and their count (a preview's percentile and its sample): one pass over the
    // finished rows gives both, where running runs count for neither.
    return sql`
      (
        ${partialsOver(finishedRunsOfWindow(), keys, ['finished', ...percentiles], filters)}
      )`;
  }
  return sql`
    (
      ${partialsPerGroup(keys, measures, filters, shape)}
    ) AS partials`;
}

/** Whether a measure is a duration percentile: with rollups, those are read by durations.ts. */
export const isPercentileMeasure = (measure: Measure) => MEASURES[measure].uses.some(isPercentile);

/**
 * Measures per group, of the runs that match the filters. With rollups, only the measures that are not
 * percentiles: those come from durations.ts (measures.ts puts the two together).
 */
export function selectMeasuresPer(
  keys: GroupKeys,
  measures: readonly Measure[],
  filters: readonly SummaryFilter[],
  shape: ReportShape,
) {
  const selected = shape === 'raw' ? measures : measures.filter((measure) => !isPercentileMeasure(measure));
  const source = measuresSource(keys, selected, summaryFilters(filters), shape);
  return sql`
    SELECT ${keyNames(keys)},
      ${selectMeasures(selected)}
    FROM ${source}
    ${shape === 'raw' ? RAW_ONLY : ''}`;
}

/** The fragments of the summary's filters, by name. */
export const summaryFilters = (filters: readonly SummaryFilter[]) => filters.map((filter) => SUMMARY_FILTERS[filter]);

/** The groups of the reports: the window (current or previous), the agent, the time bucket. */
export const GROUP_KEYS = {
  // The report queries read [window_start, window_end) — the previous and the current window — and tell the two
  // apart by current_start.
  is_current: { sql: `run_timestamp >= ${timeParam('current_start')}`, type: 'UInt8' },
  agent_name: { sql: 'run_agent', type: 'String' },
} as const satisfies GroupKeys;

/**
 * Both windows in one query; the summary's measures unless others are named. Parameters: project_id, window_start
 * (the previous window's start), current_start, window_end, and the whole hours of both windows (rollups.ts).
 */
export const selectSummary = (
  filters: readonly SummaryFilter[],
  shape: ReportShape,
  measures: readonly Measure[] = SUMMARY_MEASURES,
) => selectMeasuresPer({ is_current: GROUP_KEYS.is_current }, measures, filters, shape);

/** The measures of a time-series bucket: the summary's but its distinct counts (contract §9). */
export const TIMESERIES_MEASURES = SUMMARY_MEASURES.filter(
  (measure): measure is Exclude<(typeof SUMMARY_MEASURES)[number], 'unique_agents' | 'unique_tools'> =>
    measure !== 'unique_agents' && measure !== 'unique_tools',
);

/** Bucket sizes, as ClickHouse intervals: the only variable text of the time-series query, picked by name. */
export const BUCKET_INTERVALS = {
  minute: 'INTERVAL 1 MINUTE',
  hour: 'INTERVAL 1 HOUR',
  day: 'INTERVAL 1 DAY',
} as const;
export type BucketUnit = keyof typeof BUCKET_INTERVALS;

/** The key of a time series' groups: the start of a run's bucket, in milliseconds since the epoch. */
export const timeseriesKeys = (unit: BucketUnit) => {
  const start = `toStartOfInterval(run_timestamp, ${BUCKET_INTERVALS[unit]}, 'UTC')`;
  return { bucket_start: { sql: `toUnixTimestamp64Milli(toDateTime64(${start}, 3, 'UTC'))`, type: 'Int64' } };
};

/**
 * Per UTC-aligned bucket of the window [window_start, window_end), every time-series measure over the runs that
 * started in both; buckets without runs have no row. `raw`: one pass over the runs. `rollups` (hour and day
 * buckets): the hourly projection for the window's whole hours and raw rows for the rest, with each bucket's exact
 * percentiles from durations.ts, as the summary. The parameters are the summary's, with an empty previous window.
 */
export const selectTimeseries = (filters: readonly SummaryFilter[], unit: BucketUnit, shape: ReportShape) =>
  selectMeasuresPer(timeseriesKeys(unit), TIMESERIES_MEASURES, filters, shape);

/**
 * Per agent and window, every health measure; the service keeps the previous window's total_runs only. Same
 * parameters as the summary.
 */
export const selectHealth = (shape: ReportShape, filters: readonly SummaryFilter[] = []) => sql`
  SELECT agent_name, is_current,
    ${selectMeasures(HEALTH_MEASURES)}
  FROM (
    ${partialsPerGroup(GROUP_KEYS, HEALTH_MEASURES, summaryFilters(filters), shape)}
  )
  ${shape === 'raw' ? RAW_ONLY : ''}`;
