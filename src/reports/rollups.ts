// Long windows read hourly rollups: the whole hours of a report's windows come from the hourly projection of
// `runs` (one row per agent and hour, schema/clickhouse/0002_run_rollups.sql), and only the partial hours at
// their edges, the running runs and the exact percentiles from raw rows. Values always travel as bound parameters.
import { DAY_MS, HOUR_MS } from '../clock';
import { fromClickHouseTime, toClickHouseTime } from '../db/clickhouse';
import type { SettledRange } from '../db/settled-reads';
import { sql } from './sql';
import { runInputs, storedSince, timeParam, type TimeRange } from './window-runs';

/** The whole units (UTC-aligned) inside a range; an empty range at its end when it holds none. */
function wholeUnits({ from, to }: TimeRange, unitMs: number): TimeRange {
  const start = Math.ceil(from.getTime() / unitMs) * unitMs;
  const end = Math.floor(to.getTime() / unitMs) * unitMs;
  return start < end ? { from: new Date(start), to: new Date(end) } : { from: to, to };
}

/** The whole hours inside a range; an empty range at its end when it holds none. */
export const wholeHours = (range: TimeRange) => wholeUnits(range, HOUR_MS);
/** The whole UTC days inside a range; an empty range at the end of its whole hours when it holds none. */
export function wholeDays(range: TimeRange): TimeRange {
  const days = wholeUnits(range, DAY_MS);
  const hoursEnd = wholeHours(range).to;
  return days.from < days.to ? days : { from: hoursEnd, to: hoursEnd };
}

const wholeHoursMs = (range: TimeRange) => {
  const hours = wholeHours(range);
  return hours.to.getTime() - hours.from.getTime();
};

/** How a report reads its runs: rollups for the windows' whole hours, or one pass over the raw rows. */
export type ReportShape = 'rollups' | 'raw';

/**
 * The SETTINGS of a read that a projection of `runs` answers, naming it (schema/clickhouse/0002, 0005): the planner
 * then weighs that one alone instead of every projection of the table, which costs it several milliseconds per read
 * (docs/reports.md). A preference: where the named one cannot answer, ClickHouse picks as it otherwise would.
 */
export const fromProjection = (name: string) => `SETTINGS preferred_optimize_projection_name = '${name}'`;

/** A report's window and the one before it, of the same length: [from − (to − from), from). */
export interface ReportWindows {
  current: TimeRange;
  previous: TimeRange;
}

/** A window alone, in the terms of the report queries: with an empty previous window at its start. */
export const alone = (window: TimeRange): ReportWindows => ({
  previous: { from: window.from, to: window.from },
  current: window,
});

// The report queries read the runs of [previous.from, current.to) and tell the two windows apart by current.from.
export const windowParams = (projectId: string, windows: ReportWindows, now: Date) => ({
  project_id: projectId,
  stored_since: storedSince(now),
  window_start: toClickHouseTime(windows.previous.from),
  window_end: toClickHouseTime(windows.current.to),
  current_start: toClickHouseTime(windows.current.from),
  ...wholeHourParams(windows.previous, windows.current),
});

const [HOURS_START, HOURS_END] = ['hours_start', 'hours_end'].map(timeParam);
/** Rows of one window's whole hours [hours_start, hours_end) (hourWindowParams), by an hour `column`. */
export const inWindowHours = (column: string) => `${column} >= ${HOURS_START} AND ${column} < ${HOURS_END}`;
/** Rows of one window outside its whole hours (the partial hours at its edges), by their start time `column`. */
export const outsideWindowHours = (column: string) => `(${column} < ${HOURS_START} OR ${column} >= ${HOURS_END})`;

/**
 * The parameters of one window read by hours: its whole hours [hours_start, hours_end) come from an hourly rollup,
 * the rest from rows; `byRows` reads every hour from rows (an empty range of hours at the window's end).
 */
export function hourWindowParams(projectId: string, window: TimeRange, now: Date, byRows = false) {
  const hours = byRows ? { from: window.to, to: window.to } : wholeHours(window);
  return {
    project_id: projectId,
    stored_since: storedSince(now),
    window_start: toClickHouseTime(window.from),
    window_end: toClickHouseTime(window.to),
    hours_start: toClickHouseTime(hours.from),
    hours_end: toClickHouseTime(hours.to),
  };
}

/**
 * Rollups pay off once the two windows hold a day of whole hours; below that, one pass over the raw rows is
 * cheaper than the rollups plus a second read for the percentiles (at 10 M runs on 2 cores: a 5-minute window
 * 18 ms raw against 35 ms with rollups, a day about even, 7 days 245 ms raw against 126 ms).
 */
export const reportShape = (previous: TimeRange, current: TimeRange): ReportShape =>
  wholeHoursMs(previous) + wholeHoursMs(current) >= 24 * HOUR_MS ? 'rollups' : 'raw';

/** The whole hours and days of a report's previous and current windows, as the parameters of the fragments below. */
export function wholeHourParams(previous: TimeRange, current: TimeRange) {
  const [previousHours, currentHours] = [wholeHours(previous), wholeHours(current)];
  const [previousDays, currentDays] = [wholeDays(previous), wholeDays(current)];
  return {
    previous_hours_start: toClickHouseTime(previousHours.from),
    previous_hours_end: toClickHouseTime(previousHours.to),
    current_hours_start: toClickHouseTime(currentHours.from),
    current_hours_end: toClickHouseTime(currentHours.to),
    previous_days_start: toClickHouseTime(previousDays.from),
    previous_days_end: toClickHouseTime(previousDays.to),
    current_days_start: toClickHouseTime(currentDays.from),
    current_days_end: toClickHouseTime(currentDays.to),
  };
}

const [PREVIOUS_START, PREVIOUS_END, CURRENT_START, CURRENT_END] = [
  'previous_hours_start',
  'previous_hours_end',
  'current_hours_start',
  'current_hours_end',
].map(timeParam);

/**
 * Rows outside the whole hours, by their start time `column`: the partial hours at the windows' edges. The previous
 * window's whole hours end before the current window's begin, so the rest is three ranges of the primary key.
 */
export const outsideWholeHours = (column: string) => sql`
  (${column} < ${PREVIOUS_START}
    OR (${column} >= ${PREVIOUS_END} AND ${column} < ${CURRENT_START})
    OR ${column} >= ${CURRENT_END})`;
/** Finished rows of `runs` outside the whole hours. */
export const OUTSIDE_WHOLE_HOURS = outsideWholeHours('timestamp');

/**
 * The run_* columns of the measures (window-runs.ts) over the finished rows of `runs`, with the hour for the start
 * time: the rollup forms of the partials (signals.ts) then read as the hourly projection's aggregates, and
 * ClickHouse answers them from it. A WITH alias is replaced by its expression before that match.
 */
export const AS_ROLLUP_COLUMNS = sql`
  WITH
    ${runInputs('rollup')}`;

/** AS_ROLLUP_COLUMNS with the day for the start time: the daily duration projections' terms (durations.ts). */
export const AS_DAILY_ROLLUP_COLUMNS = sql`
  WITH
    ${runInputs('rollup').replace('toStartOfHour(timestamp) AS', 'toStartOfDay(timestamp) AS')}`;

/** The rows of the whole hours of both windows, in the terms of AS_ROLLUP_COLUMNS. */
export const IN_WHOLE_HOURS = sql`
  project_id = {project_id:UUID}
    AND ((run_timestamp >= ${PREVIOUS_START} AND run_timestamp < ${PREVIOUS_END})
      OR (run_timestamp >= ${CURRENT_START} AND run_timestamp < ${CURRENT_END}))`;

const [PREVIOUS_DAYS_START, PREVIOUS_DAYS_END, CURRENT_DAYS_START, CURRENT_DAYS_END] = [
  'previous_days_start',
  'previous_days_end',
  'current_days_start',
  'current_days_end',
].map(timeParam);

/** The whole days of both windows, by a daily rollup's day `column`. */
export const inWholeDays = (column: string) => sql`
  project_id = {project_id:UUID}
    AND ((${column} >= ${PREVIOUS_DAYS_START} AND ${column} < ${PREVIOUS_DAYS_END})
      OR (${column} >= ${CURRENT_DAYS_START} AND ${column} < ${CURRENT_DAYS_END}))`;
/** The whole days of both windows, in the terms of AS_DAILY_ROLLUP_COLUMNS. */
export const IN_WHOLE_DAYS = inWholeDays('run_timestamp');

/**
 * The whole hours of both windows outside their whole days (the hours of the days at their edges), by an hourly
 * rollup's hour `column`: four ranges of its primary key.
 */
export const inWholeHoursOutsideDays = (column: string) => sql`
  project_id = {project_id:UUID}
    AND ((${column} >= ${PREVIOUS_START} AND ${column} < ${PREVIOUS_DAYS_START})
      OR (${column} >= ${PREVIOUS_DAYS_END} AND ${column} < ${PREVIOUS_END})
      OR (${column} >= ${CURRENT_START} AND ${column} < ${CURRENT_DAYS_START})
      OR (${column} >= ${CURRENT_DAYS_END} AND ${column} < ${CURRENT_END}))`;
/** The whole hours of both windows outside their whole days, in the terms of AS_ROLLUP_COLUMNS. */
export const IN_WHOLE_HOURS_OUTSIDE_DAYS = inWholeHoursOutsideDays('run_timestamp');

/**
 * What a read of the whole hours and days of a report's windows, or of a run list's whole hours, reads, for
 * ClickHouseStore.querySettled: the rows of `runs` that started in [the first whole hour of window_start, the last
 * whole hour of window_end). None for a read without a window, or a window without a whole hour.
 */
export function settledHours(params: Record<string, unknown>): SettledRange | undefined {
  const [start, end] = [params.window_start, params.window_end];
  if (typeof start !== 'string' || typeof end !== 'string') return undefined;
  const { from, to } = wholeHours({ from: fromClickHouseTime(start), to: fromClickHouseTime(end) });
  return from < to ? { table: 'runs', from, to } : undefined;
}

/**
 * A read of whole hours and days with the parameters it keeps from one call to the next. The windows of a dashboard
 * end now, so `current_start` moves at every call; over whole hours and days, the groups it tells apart (the current
 * window's from the previous one) are the same at the current window's first whole hour, which moves once an hour.
 */
export const settledParams = (params: Record<string, unknown>) =>
  'current_hours_start' in params ? { ...params, current_start: params.current_hours_start } : params;
