// "The runs of a window": finished rows of `runs` in [start, end) and the live rows of runs not yet finished.
//
// Every report and every alert signal reads runs through these fragments, so a run is counted the same way
// everywhere: once, in its latest state. Values always travel as parameters: {project_id:UUID} and the window's
// bounds, {window_start:DateTime64(3, 'UTC')} and {window_end:DateTime64(3, 'UTC')}.

/** A window of time, [from, to). */
export interface TimeRange {
  from: Date;
  to: Date;
}

/** A bound parameter of type DateTime64(3, 'UTC'), by name. */
export const timeParam = (name: string) => `{${name}:DateTime64(3, 'UTC')}`;

/** Rows of one project whose start time is in the window; the primary key (project_id, timestamp, id) bounds the read. */
export const inWindow = () =>
  `project_id = {project_id:UUID} AND timestamp >= ${timeParam('window_start')} AND timestamp < ${timeParam('window_end')}`;

/**
 * Live rows of the window whose run has no finished row. `live_runs FINAL` leaves out finished runs (their last
 * version is a tombstone), so it holds the running runs, plus a run caught in the instant between its finished
 * row and its tombstone: the anti-join looks those few keys up in `runs` through the primary key (the set of
 * keys itself selects the granules to read; bounding it by the oldest live key as well was slower) and never
 * scans the window. Both sides are in one project, so (timestamp, id) identifies a run.
 */
export const liveNotFinished = () => `${inWindow()}
    AND (timestamp, id) NOT IN (
      SELECT timestamp, id FROM runs
      WHERE project_id = {project_id:UUID}
        AND (timestamp, id) IN (SELECT timestamp, id FROM live_runs FINAL WHERE ${inWindow()}))`;

/**
 * The finished runs of the window, with the columns signals read. Columns are renamed `run_*` so that
 * aggregates can be aliased with the report's field names (`total_steps`, …) without shadowing a column.
 * `run_finished` and `run_completed` are computed per side (a constant, or a comparison ClickHouse evaluates
 * once per LowCardinality dictionary entry), so aggregates never compare status strings row by row. Unused
 * columns are pruned, so a query reads only what its aggregates need. `also` narrows the rows further (a
 * fixed fragment over the columns of `runs`).
 */
export const finishedRunsOfWindow = (also?: string) => `
  SELECT timestamp AS run_timestamp, agent_name AS run_agent, true AS run_finished,
         status = 'completed' AS run_completed, loop_detected AS run_loop, total_cost_usd AS run_cost,
         total_tokens AS run_tokens, duration_ms AS run_duration_ms, total_steps AS run_steps,
         tool_calls AS run_tool_calls, tool_names AS run_tool_names
  FROM runs
  WHERE ${inWindow()}${also ? ` AND ${also}` : ''}`;

/**
 * One row per run of the window: the finished runs (only those matching `finishedAlso`, when given) and the
 * running ones, with the same columns.
 */
export const runsOfWindow = (finishedAlso?: string) => `${finishedRunsOfWindow(finishedAlso)}
  UNION ALL
  SELECT timestamp, agent_name, false,
         false, loop_detected, total_cost_usd,
         total_tokens, toUInt64(0), total_steps,
         tool_calls, tool_names
  FROM live_runs FINAL
  WHERE ${liveNotFinished()}`;
