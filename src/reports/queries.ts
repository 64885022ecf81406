// SQL of the report endpoints: summary, health and the run list. Values are always bound parameters; the only
// variable SQL text is picked from fixed, allow-listed fragments (measures, filters).
import { OUTSIDE_WHOLE_HOURS, selectFromRollups, type ReportShape } from './rollups';
import {
  combinePartials,
  isPercentile,
  partialsOf,
  selectMeasures,
  selectPartials,
  type Measure,
  type PartialAggregate,
  type RollupPartial,
} from './signals';
import { finishedRunsOfWindow, inWindow, liveNotFinished, runsOfWindow, timeParam } from './window-runs';

export const SUMMARY_MEASURES = [
  'total_runs',
  'completed_runs',
  'completion_rate',
  'loop_runs',
  'loop_rate',
  'avg_cost_usd',
  'avg_tokens',
  'duration_p50_ms',
  'duration_p95_ms',
  'duration_p99_ms',
  'total_steps',
  'total_tool_calls',
  'unique_agents',
  'unique_tools',
] as const satisfies readonly Measure[];

export const HEALTH_MEASURES = [
  'total_runs',
  'completed_runs',
  'completion_rate',
  'loop_runs',
  'loop_rate',
  'avg_cost_usd',
  'avg_tokens',
] as const satisfies readonly Measure[];

const whereAll = (conditions: readonly string[]) => (conditions.length > 0 ? `WHERE ${conditions.join(' AND ')}` : '');

/** The summary's filters: fixed fragments over the runs of a window (and the rollup rows), picked by name. */
export const SUMMARY_FILTERS = { agent_name: 'run_agent = {agent_name:String}' } as const;
export type SummaryFilter = keyof typeof SUMMARY_FILTERS;

// The report queries read [window_start, window_end) — the previous and the current window — and tell the two
// apart by current_start.
const IS_CURRENT = `run_timestamp >= ${timeParam('current_start')}`;

const rolledUp = (partial: PartialAggregate): partial is RollupPartial => !isPercentile(partial);

/**
 * The partials of the measures per group (`keys`: name → expression over run_timestamp and run_agent), over
 * both windows. `raw`: one pass over the runs. `rollups`: the hourly projection for the windows' whole hours,
 * plus the raw rows of the rest (the partial hours at the edges, and the running runs), without the percentiles.
 */
function selectGroupPartials(
  keys: Record<string, string>,
  measures: readonly Measure[],
  filters: readonly string[],
  shape: ReportShape,
) {
  const names = Object.keys(keys).join(', ');
  const keyColumns = Object.entries(keys)
    .map(([name, expression]) => `${expression} AS ${name}`)
    .join(', ');
  if (shape === 'raw') {
    return `
    SELECT ${keyColumns}, ${selectPartials(partialsOf(measures), 'raw')}
    FROM (${runsOfWindow()}) ${whereAll(filters)}
    GROUP BY ${names}`;
  }
  const partials = partialsOf(measures).filter(rolledUp);
  return `
    SELECT ${names}, ${combinePartials(partials)}
    FROM (
      SELECT * FROM (${selectFromRollups(`${keyColumns}, ${selectPartials(partials, 'rollup')}`, filters, names)})
      UNION ALL
      SELECT ${keyColumns}, ${selectPartials(partials, 'raw')}
      FROM (${runsOfWindow(OUTSIDE_WHOLE_HOURS)}) ${whereAll(filters)}
      GROUP BY ${names})
    GROUP BY ${names}`;
}

/**
 * Measures per group of one key (`name`: an expression over run_timestamp and run_agent). With rollups, the
 * groups' partials are joined with the exact duration percentiles asked for, which need every finished run's
 * duration (the one column whose read grows with the window).
 */
function selectKeyedMeasures(
  name: string,
  expression: string,
  measures: readonly Measure[],
  filters: readonly SummaryFilter[],
  shape: ReportShape,
) {
  const conditions = filters.map((filter) => SUMMARY_FILTERS[filter]);
  const percentiles = partialsOf(measures).filter(isPercentile);
  if (
    percentiles.length > 0 &&
    partialsOf(measures).every((partial) => isPercentile(partial) || partial === 'finished')
  ) {
    // Percentiles over the finished runs and their count (a preview's percentile and its sample): one pass over the
    // finished rows gives both, where rollups would add a second read and running runs count for neither.
    return `
  SELECT ${name}, ${selectMeasures(measures)}
  FROM (
    SELECT ${expression} AS ${name}, ${selectPartials(['finished', ...percentiles], 'raw')}
    FROM (${finishedRunsOfWindow()}) ${whereAll(conditions)}
    GROUP BY ${name})`;
  }
  const partials = `(${selectGroupPartials({ [name]: expression }, measures, conditions, shape)}) AS partials`;
  return `
  SELECT ${name}, ${selectMeasures(measures)}
  FROM ${
    shape === 'raw' || percentiles.length === 0
      ? partials
      : `${partials}
  LEFT JOIN (
    SELECT ${expression} AS ${name}, ${selectPartials(percentiles, 'raw')}
    FROM (${finishedRunsOfWindow()}) ${whereAll(conditions)}
    GROUP BY ${name}
  ) AS durations USING ${name}`
  }`;
}

/**
 * Both windows in one query (two columns of durations are read with rollups); the summary's measures unless
 * others are named. Parameters: project_id, window_start (the previous window's start), current_start,
 * window_end, and the whole hours of both windows (rollups.ts).
 */
export const selectSummary = (
  filters: readonly SummaryFilter[],
  shape: ReportShape,
  measures: readonly Measure[] = SUMMARY_MEASURES,
) => selectKeyedMeasures('is_current', IS_CURRENT, measures, filters, shape);

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

/**
 * Per UTC-aligned bucket of the window [window_start, window_end), every time-series measure over the runs that
 * started in both; buckets without runs have no row, and `bucket_start` is in milliseconds since the epoch. `raw`:
 * one pass over the runs. `rollups` (hour and day buckets): the hourly projection for the window's whole hours and
 * raw rows for the rest, joined with the exact duration percentiles of each bucket, as the summary does. The
 * parameters are the summary's, with an empty previous window.
 */
export const selectTimeseries = (filters: readonly SummaryFilter[], unit: BucketUnit, shape: ReportShape) =>
  selectKeyedMeasures(
    'bucket_start',
    `toUnixTimestamp64Milli(toDateTime64(toStartOfInterval(run_timestamp, ${BUCKET_INTERVALS[unit]}, 'UTC'), 3, 'UTC'))`,
    TIMESERIES_MEASURES,
    filters,
    shape,
  );

/**
 * Per agent and window, every health measure; the service keeps the previous window's total_runs only. Same
 * parameters as the summary.
 */
export const selectHealth = (shape: ReportShape) => `
  SELECT agent_name, is_current, ${selectMeasures(HEALTH_MEASURES)}
  FROM (${selectGroupPartials({ is_current: IS_CURRENT, agent_name: 'run_agent' }, HEALTH_MEASURES, [], shape)})`;

/**
 * The run list's filters, one fixed fragment per table: live rows are all `running`, so a status filter
 * other than `running` folds the live side to a constant false (and `running` the finished side to nothing).
 */
export const RUN_FILTERS = {
  agent_name: { finished: 'agent_name = {agent_name:String}', live: 'agent_name = {agent_name:String}' },
  status: { finished: 'status = {status:String}', live: "'running' = {status:String}" },
  loop_detected: { finished: 'loop_detected = {loop_detected:Bool}', live: 'loop_detected = {loop_detected:Bool}' },
} as const;
export type RunFilter = keyof typeof RUN_FILTERS;

const andFilters = (filters: readonly RunFilter[], side: 'finished' | 'live') =>
  filters.map((filter) => `\n    AND ${RUN_FILTERS[filter][side]}`).join('');

const countFinished = (filters: readonly RunFilter[]) =>
  `(SELECT count() FROM runs WHERE ${inWindow()}${andFilters(filters, 'finished')})`;
const selectLive = (filters: readonly RunFilter[]) =>
  `FROM live_runs FINAL WHERE ${liveNotFinished()}${andFilters(filters, 'live')}`;

/** How many runs of the window [window_start, window_end) match (for a page past the last run). */
export const countRuns = (filters: readonly RunFilter[]) => `
  SELECT ${countFinished(filters)} + (SELECT count() ${selectLive(filters)}) AS total`;

// Ids sort by their canonical string form (ClickHouse orders UUID values differently).
const RUN_ORDER = 'timestamp DESC, run_id DESC';

/**
 * Phase one of a page, in one statement: the keys of the runs at [offset, offset + limit), newest first, each
 * with the number of runs that match in all. The finished side is read in primary-key order and stops after
 * offset + limit keys (WITH TIES keeps every run sharing the last start time, which the ids then order). The
 * live side, the running runs, is read and anti-joined once: a window function counts its rows before the
 * LIMIT, and the outer one carries that count to every key of the page. Read-in-order buffering is off: with a
 * LIMIT it reads far ahead of the few granules a page needs.
 */
export const selectPageKeys = (filters: readonly RunFilter[]) => `
  SELECT timestamp, run_id AS id, live, ${countFinished(filters)} + max(live_total) OVER () AS total
  FROM (
    SELECT timestamp, toString(id) AS run_id, true AS live, count() OVER () AS live_total
    ${selectLive(filters)}
    ORDER BY ${RUN_ORDER} LIMIT {page_end:UInt64}
    UNION ALL
    SELECT timestamp, toString(id) AS run_id, false AS live, 0 AS live_total FROM runs
    WHERE ${inWindow()}${andFilters(filters, 'finished')}
    ORDER BY timestamp DESC LIMIT {page_end:UInt64} WITH TIES
  )
  ORDER BY ${RUN_ORDER}
  LIMIT {limit:UInt64} OFFSET {offset:UInt64}
  SETTINGS read_in_order_use_buffering = 0`;

const RUN_COLUMNS =
  'project_id, timestamp, id, agent_name, input, metadata, loop_detected, loop_step_index, total_steps, total_tokens, total_cost_usd, tool_calls, tool_names';
// A running run has none of these; it reads as placeholders of the same types, and `status` tells it apart.
const FINISHED_COLUMNS = 'status, finished_at, duration_ms, output, termination_reason, termination_detail';
const RUNNING_PLACEHOLDERS = "'running', toDateTime64(0, 3, 'UTC'), toUInt64(0), '', '', ''";
const pageRange = (side: 'finished' | 'live') => `project_id = {project_id:UUID}
    AND timestamp >= {${side}_first:DateTime64(3, 'UTC')} AND timestamp <= {${side}_last:DateTime64(3, 'UTC')}
    AND id IN {${side}_ids:Array(UUID)}`;

/**
 * Phase two, in one statement: the whole rows of a page's keys, found through the primary key (each side's time
 * range) and ids: finished runs from `runs`, running ones from `live_runs`. Only the sides the page has.
 */
export const selectPageRows = (sides: readonly ('finished' | 'live')[]) =>
  sides
    .map((side) =>
      side === 'finished'
        ? `SELECT ${RUN_COLUMNS}, ${FINISHED_COLUMNS} FROM runs WHERE ${pageRange('finished')}`
        : `SELECT ${RUN_COLUMNS}, ${RUNNING_PLACEHOLDERS} FROM live_runs FINAL WHERE ${pageRange('live')}`,
    )
    .join('\n  UNION ALL\n  ');
