// SQL that reads single runs and their steps; every lookup is bounded by project (and the start time when known).
const RUN_TOTALS = 'loop_detected, loop_step_index, total_steps, total_tokens, total_cost_usd, tool_calls, tool_names';

// A run in its latest state, in one round trip: its finished row when there is one, else its live row.
// FINAL here reads one run's few versions, not the table.
const latestRun = (where: string) => `
  SELECT * FROM (
    SELECT 1 AS finished, project_id, timestamp, id, 0 AS version, agent_name, status, finished_at, duration_ms,
           input, output, termination_reason, termination_detail, metadata, ${RUN_TOTALS}
    FROM runs WHERE ${where}
    UNION ALL
    SELECT 0 AS finished, project_id, timestamp, id, version, agent_name, 'running', timestamp, 0,
           input, '', '', '', metadata, ${RUN_TOTALS}
    FROM live_runs FINAL WHERE ${where}
  )
  ORDER BY finished DESC
  LIMIT 1`;

export const SELECT_LATEST_RUN = latestRun(
  `project_id = {project_id:UUID} AND timestamp = {timestamp:DateTime64(3, 'UTC')} AND id = {id:UUID}`,
);

// Without the start time a run is found by its id through the bloom-filter index of `runs`.
export const SELECT_LATEST_RUN_BY_ID = latestRun('project_id = {project_id:UUID} AND id = {id:UUID}');

export const SELECT_STEPS = `
  SELECT project_id, run_timestamp, run_id, \`index\`, version, type, name, tool_name, model, input, output,
         tokens, cost_usd, started_at, duration_ms, error
  FROM run_steps FINAL
  WHERE project_id = {project_id:UUID} AND run_timestamp = {timestamp:DateTime64(3, 'UTC')} AND run_id = {id:UUID}
  ORDER BY \`index\``;

// Finished runs among a set of (start time, id) pairs, for de-duplicating whole runs sent twice.
// The column is selected as is: an alias `toString(id) AS id` would shadow the column in WHERE, and the
// String-vs-UUID `IN` below would then match nothing. JSONEachRow writes a UUID as its string anyway.
export const SELECT_FINISHED_IDS = `
  SELECT id FROM runs
  WHERE project_id = {project_id:UUID}
    AND timestamp BETWEEN {from:DateTime64(3, 'UTC')} AND {to:DateTime64(3, 'UTC')}
    AND id IN {ids:Array(UUID)}`;
