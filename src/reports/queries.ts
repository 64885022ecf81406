// SQL of the report endpoints: summary, health and time series (and the alert preview, which is the summary's
// statement over one window), and the run list. Values are always bound parameters; the only variable SQL text is
// picked from fixed, allow-listed fragments (measures, filters, bucket sizes). Every statement as ClickHouse
// receives it is in test/reports/golden.
import { EITHER_TABLE_SELECT } from '../runs/tables';
import { AS_ROLLUP_COLUMNS, IN_WHOLE_HOURS, OUTSIDE_WHOLE_HOURS, type ReportShape } from './rollups';
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
import { andEach, sql, whereAll } from './sql';
import { finishedRunsOfWindow, IN_WINDOW, LIVE_NOT_FINISHED, runsOfWindow, timeParam } from './window-runs';

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

/** The summary's filters: fixed fragments over the runs of a window (and the rollup rows), picked by name. */
export const SUMMARY_FILTERS = { agent_name: 'run_agent = {agent_name:String}' } as const;
export type SummaryFilter = keyof typeof SUMMARY_FILTERS;

// ── Aggregate reports ──────────────────────────────────────────────────────────────────────────────────────────
// Summary, health, time series and the preview select measures (signals.ts) per group: the window (`is_current`),
// the agent, the time bucket. A measure is an expression over partial aggregates (counts, exact sums, name sets),
// which add up across any split of the runs; so the partials of a group may come from one pass over the raw rows
// (partialsOver), or from the hourly projection for the whole hours plus raw rows for the rest (rollupPartials).
// Exact percentiles cannot be rolled up: they always come from one pass over the finished rows.

/** A report's groups: each key column's name, and its expression over run_timestamp and run_agent. */
type GroupKeys = Readonly<Record<string, string>>;

const keyNames = (keys: GroupKeys) => Object.keys(keys).join(', ');
const keyColumns = (keys: GroupKeys) =>
  Object.entries(keys)
    .map(([name, expression]) => `${expression} AS ${name}`)
    .join(', ');

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
      GROUP BY ${keyNames(keys)})
    UNION ALL
    ${partialsOver(runsOfWindow([OUTSIDE_WHOLE_HOURS]), keys, partials, filters)})
  GROUP BY ${keyNames(keys)}`;

/** The partials of the measures per group, over the runs of both windows; with rollups, without the percentiles. */
const partialsPerGroup = (keys: GroupKeys, measures: readonly Measure[], filters: Filters, shape: ReportShape) =>
  shape === 'raw'
    ? partialsOver(runsOfWindow(), keys, partialsOf(measures), filters)
    : rollupPartials(keys, partialsOf(measures).filter(rolledUp), filters);

/** What the measures per group are selected from: their partials, and the percentiles they need. */
function measuresSource(keys: GroupKeys, measures: readonly Measure[], filters: Filters, shape: ReportShape) {
  const percentiles = partialsOf(measures).filter(isPercentile);
  const finishedOnly = partialsOf(measures).every((partial) => isPercentile(partial) || partial === 'finished');
  if (percentiles.length > 0 && finishedOnly) {
    // Percentiles over the finished runs and their count (a preview's percentile and its sample): one pass over the
    // finished rows gives both, where rollups would add a second read and running runs count for neither.
    return sql`
      (
        ${partialsOver(finishedRunsOfWindow(), keys, ['finished', ...percentiles], filters)}
      )`;
  }
  const groupPartials = sql`
    (
      ${partialsPerGroup(keys, measures, filters, shape)}
    ) AS partials`;
  if (shape === 'raw' || percentiles.length === 0) return groupPartials;
  // Rollups hold no percentiles: the exact ones need every finished run's duration, the one column whose read grows
  // with the window, and are joined to the groups from one pass over the finished rows.
  return sql`
    ${groupPartials}
    LEFT JOIN (
      ${partialsOver(finishedRunsOfWindow(), keys, percentiles, filters)}
    ) AS durations USING ${keyNames(keys)}`;
}

/** Measures per group, of the runs that match the filters. */
function selectMeasuresPer(
  keys: GroupKeys,
  measures: readonly Measure[],
  filters: readonly SummaryFilter[],
  shape: ReportShape,
) {
  const source = measuresSource(
    keys,
    measures,
    filters.map((filter) => SUMMARY_FILTERS[filter]),
    shape,
  );
  return sql`
    SELECT ${keyNames(keys)},
      ${selectMeasures(measures)}
    FROM ${source}`;
}

// The report queries read [window_start, window_end) — the previous and the current window — and tell the two
// apart by current_start.
const IS_CURRENT = `run_timestamp >= ${timeParam('current_start')}`;

/**
 * Both windows in one query (two columns of durations are read with rollups); the summary's measures unless
 * others are named. Parameters: project_id, window_start (the previous window's start), current_start,
 * window_end, and the whole hours of both windows (rollups.ts).
 */
export const selectSummary = (
  filters: readonly SummaryFilter[],
  shape: ReportShape,
  measures: readonly Measure[] = SUMMARY_MEASURES,
) => selectMeasuresPer({ is_current: IS_CURRENT }, measures, filters, shape);

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

const bucketStart = (unit: BucketUnit) =>
  `toUnixTimestamp64Milli(toDateTime64(toStartOfInterval(run_timestamp, ${BUCKET_INTERVALS[unit]}, 'UTC'), 3, 'UTC'))`;

/**
 * Per UTC-aligned bucket of the window [window_start, window_end), every time-series measure over the runs that
 * started in both; buckets without runs have no row, and `bucket_start` is in milliseconds since the epoch. `raw`:
 * one pass over the runs. `rollups` (hour and day buckets): the hourly projection for the window's whole hours and
 * raw rows for the rest, joined with the exact duration percentiles of each bucket, as the summary does. The
 * parameters are the summary's, with an empty previous window.
 */
export const selectTimeseries = (filters: readonly SummaryFilter[], unit: BucketUnit, shape: ReportShape) =>
  selectMeasuresPer({ bucket_start: bucketStart(unit) }, TIMESERIES_MEASURES, filters, shape);

/**
 * Per agent and window, every health measure; the service keeps the previous window's total_runs only. Same
 * parameters as the summary.
 */
export const selectHealth = (shape: ReportShape) => sql`
  SELECT agent_name, is_current,
    ${selectMeasures(HEALTH_MEASURES)}
  FROM (
    ${partialsPerGroup({ is_current: IS_CURRENT, agent_name: 'run_agent' }, HEALTH_MEASURES, [], shape)}
  )`;

// ── The run list ───────────────────────────────────────────────────────────────────────────────────────────────

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

const runFilters = (filters: readonly RunFilter[], side: 'finished' | 'live') =>
  andEach(filters.map((filter) => RUN_FILTERS[filter][side]));

/** The finished runs of the window that match, as a subquery. */
const countFinished = (filters: readonly RunFilter[]) => sql`
  (SELECT count() FROM runs WHERE ${IN_WINDOW}${runFilters(filters, 'finished')})`;

/** The running runs of the window that match: a FROM and its WHERE. */
const fromLive = (filters: readonly RunFilter[]) => sql`
  FROM live_runs FINAL WHERE ${LIVE_NOT_FINISHED}${runFilters(filters, 'live')}`;

/** How many runs of the window [window_start, window_end) match (for a page past the last run). */
export const countRuns = (filters: readonly RunFilter[]) => sql`
  SELECT ${countFinished(filters)} + (SELECT count() ${fromLive(filters)}) AS total`;

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
export const selectPageKeys = (filters: readonly RunFilter[]) => sql`
  SELECT timestamp, run_id AS id, live, ${countFinished(filters)} + max(live_total) OVER () AS total
  FROM (
    SELECT timestamp, toString(id) AS run_id, true AS live, count() OVER () AS live_total
    ${fromLive(filters)}
    ORDER BY ${RUN_ORDER} LIMIT {page_end:UInt64}
    UNION ALL
    SELECT timestamp, toString(id) AS run_id, false AS live, 0 AS live_total FROM runs
    WHERE ${IN_WINDOW}${runFilters(filters, 'finished')}
    ORDER BY timestamp DESC LIMIT {page_end:UInt64} WITH TIES
  )
  ORDER BY ${RUN_ORDER}
  LIMIT {limit:UInt64} OFFSET {offset:UInt64}
  SETTINGS read_in_order_use_buffering = 0`;

/** A side's page rows, through the primary key (the time range of its keys) and its ids. */
const pageRange = (side: 'finished' | 'live') => sql`
  project_id = {project_id:UUID}
    AND timestamp >= {${side}_first:DateTime64(3, 'UTC')} AND timestamp <= {${side}_last:DateTime64(3, 'UTC')}
    AND id IN {${side}_ids:Array(UUID)}`;

/** Each side's whole rows of a page, in the one shape of runs/tables.ts: finished runs, and running ones. */
const PAGE_ROWS = {
  finished: sql`
    SELECT ${EITHER_TABLE_SELECT.runs}
    FROM runs
    WHERE ${pageRange('finished')}`,
  live: sql`
    SELECT ${EITHER_TABLE_SELECT.live_runs}
    FROM live_runs FINAL
    WHERE ${pageRange('live')}`,
};

/** Phase two, in one statement: the whole rows of a page's keys, of only the sides the page has. */
export const selectPageRows = (sides: readonly (keyof typeof PAGE_ROWS)[]) =>
  sides.map((side) => PAGE_ROWS[side]).join('\nUNION ALL\n');
