// "The runs of a window": finished rows of `runs` in [start, end) and the live rows of runs not yet finished.
//
// Every report and every alert signal reads runs through these fragments, so a run is counted the same way
// everywhere: once, in its latest state. Values always travel as parameters: {project_id:UUID} and the window's
// bounds, {window_start:DateTime64(3, 'UTC')} and {window_end:DateTime64(3, 'UTC')}.
import { HOUR_MS } from '../clock';
import { toClickHouseTime } from '../db/clickhouse';
import { andEach, sql } from './sql';

/** A window of time, [from, to). */
export interface TimeRange {
  from: Date;
  to: Date;
}

/**
 * A range without what lies before `start`: empty (at `start`) when it ends before it. Every read of runs starts
 * no earlier than its project's retention (contract §3; retention/cutoffs.ts): runs past it are never counted.
 */
export function retainedPart(range: TimeRange, start: Date): TimeRange {
  const later = (date: Date) => (date < start ? start : date);
  return { from: later(range.from), to: later(range.to) };
}

/**
 * The parameter {stored_since} of LIVE_NOT_FINISHED: an hour before now. The rows' inserted_at is the engine's wall
 * clock, so the service's now counts only while it is not ahead of the wall clock (a test's clock moved forward, say);
 * the hour is far more than the service's and the engine's clocks ever differ by.
 */
export const storedSince = (now: Date) =>
  toClickHouseTime(new Date(Math.min(now.getTime(), Date.now()) - HOUR_MS)).slice(0, 19);

/**
 * The SETTINGS of a raw read, planned without a look at the projections of `runs` (which cannot answer it): each one
 * costs the planner a few milliseconds per read of the table otherwise.
 */
export const RAW_ONLY = 'SETTINGS optimize_use_projections = 0';

/**
 * The end of a raw read inside a statement whose other reads a projection answers, where RAW_ONLY cannot go:
 * ClickHouse takes optimize_use_projections from a statement's top level alone (a subquery's SETTINGS do not reach
 * the plan's optimization). It looks for an aggregate projection wherever an aggregation reads a table through
 * filters and expressions only; a LIMIT between them, which cuts nothing, ends that look, which costs ~13 ms a read
 * with the twelve projections of `runs` (docs/reports.md).
 */
export const NO_PROJECTION_LOOKUP = 'LIMIT 18446744073709551615';

/** A bound parameter of type DateTime64(3, 'UTC'), by name. */
export const timeParam = (name: string) => `{${name}:DateTime64(3, 'UTC')}`;

/** Rows of one project whose start time is in the window: the primary key (project_id, timestamp, id) bounds it. */
export const IN_WINDOW = [
  'project_id = {project_id:UUID}',
  `timestamp >= ${timeParam('window_start')}`,
  `timestamp < ${timeParam('window_end')}`,
].join(' AND ');

/**
 * Live rows of the window whose run has no finished row. `live_runs FINAL` leaves out finished runs (their last
 * version is a tombstone), so it holds the running runs, plus a run caught between its finished row and its
 * tombstone, which the flusher stores one after the other (ingest/store-lines.ts): the anti-join looks those keys up
 * among the rows of `runs` stored since {stored_since} (storedSince: the last hour) alone. The minmax index on
 * inserted_at skips every granule stored earlier, so the look-up reads the granules of recently finished runs, not a
 * day of them; a tombstone is stored moments after its finished row, or with its segment's next flush, well within
 * the hour. Both sides are in one project, so (timestamp, id) identifies a run.
 */
export const LIVE_NOT_FINISHED = sql`
  ${IN_WINDOW}
    AND (timestamp, id) NOT IN (
      SELECT timestamp, id FROM runs
      WHERE project_id = {project_id:UUID}
        AND inserted_at >= {stored_since:DateTime('UTC')}
        AND (timestamp, id) IN (SELECT timestamp, id FROM live_runs FINAL WHERE ${IN_WINDOW}))`;

/**
 * A duration's bucket: 32 buckets per power of two (each 1.6% to 3.1% wide), every millisecond its own bucket below
 * 64 ms. Monotonic in the duration, so ranks add up bucket by bucket (durations.ts). The duration projections of
 * schema/clickhouse/0005 are written with this very expression: ClickHouse matches a query to a projection by its
 * expressions.
 */
export const DURATION_BUCKET =
  'bitShiftLeft(bitShiftRight(duration_ms, toUInt8(greatest(log2(duration_ms), 5)) - 5), ' +
  'toUInt8(greatest(log2(duration_ms), 5)) - 5)';

/**
 * A run as the measures read it (signals.ts): for each `run_*` column, its expression over a finished row of
 * `runs`, over a live row of `live_runs`, and over `runs` in the hourly projection's terms (rollups.ts; none where
 * the projection does not aggregate it). Columns are renamed `run_*` so that aggregates can be aliased with the
 * report's field names (`total_steps`, …) without shadowing a column. `run_finished` and `run_completed` are
 * computed per side (a constant, or a comparison ClickHouse evaluates once per LowCardinality dictionary entry), so
 * aggregates never compare status strings row by row. Unused columns are pruned: a query reads only what its
 * aggregates need.
 */
const RUN_INPUTS: Record<string, { finished: string; live: string; rollup?: string }> = {
  run_timestamp: { finished: 'timestamp', live: 'timestamp', rollup: 'toStartOfHour(timestamp)' },
  run_agent: { finished: 'agent_name', live: 'agent_name', rollup: 'agent_name' },
  // The hourly projection has no user dimension: a report filtered by user reads raw rows (queries.ts).
  run_user: { finished: 'user_id', live: 'user_id' },
  run_finished: { finished: 'true', live: 'false' },
  run_completed: { finished: "status = 'completed'", live: 'false', rollup: "status = 'completed'" },
  run_loop: { finished: 'loop_detected', live: 'loop_detected', rollup: 'loop_detected' },
  run_cost: { finished: 'total_cost_usd', live: 'total_cost_usd', rollup: 'total_cost_usd' },
  run_tokens: { finished: 'total_tokens', live: 'total_tokens', rollup: 'total_tokens' },
  run_duration_ms: { finished: 'duration_ms', live: 'toUInt64(0)', rollup: 'duration_ms' },
  run_duration_bucket: { finished: DURATION_BUCKET, live: 'toUInt64(0)', rollup: DURATION_BUCKET },
  run_steps: { finished: 'total_steps', live: 'total_steps', rollup: 'total_steps' },
  run_tool_calls: { finished: 'tool_calls', live: 'tool_calls', rollup: 'tool_calls' },
  run_tool_names: { finished: 'tool_names', live: 'tool_names', rollup: 'tool_names' },
};

/** `expression AS run_…`, a line each: the run_* columns over a finished row, or those the projection aggregates. */
export const runInputs = (source: 'finished' | 'rollup'): string =>
  Object.entries(RUN_INPUTS)
    .flatMap(([name, expressions]) => (expressions[source] === undefined ? [] : [`${expressions[source]} AS ${name}`]))
    .join(',\n');

/** The run_* columns over a live row, in order: the second SELECT of a UNION ALL takes the first one's names. */
const LIVE_RUN_INPUTS = Object.values(RUN_INPUTS)
  .map((expressions) => expressions.live)
  .join(', ');

/** The finished runs of the window, as run_* columns; `also` narrows them further (fragments over `runs`). */
export const finishedRunsOfWindow = (also: readonly string[] = []) => sql`
  SELECT
    ${runInputs('finished')}
  FROM runs
  WHERE ${IN_WINDOW}${andEach(also)}`;

/**
 * One row per run of the window: the finished runs (only those matching `finishedAlso`, when given) and the
 * running ones, with the same columns.
 */
export const runsOfWindow = (finishedAlso: readonly string[] = []) => sql`
  ${finishedRunsOfWindow(finishedAlso)}
  UNION ALL
  SELECT ${LIVE_RUN_INPUTS}
  FROM live_runs FINAL
  WHERE ${LIVE_NOT_FINISHED}`;
