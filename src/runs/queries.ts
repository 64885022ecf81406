// SQL that reads single runs and their steps; every lookup is bounded by project (and the start time when known).
const RUN_TOTALS = 'loop_detected, loop_step_index, total_steps, total_tokens, total_cost_usd, tool_calls, tool_names';

// Runs in their latest state, in one round trip: a run's finished row when there is one, else its live row
// (both come back for a run caught between its two writes; the finished one wins). FINAL here reads the few
// versions of the runs asked for, not the table. Columns keep their own names: an alias such as
// `toString(id) AS id` would shadow the column in WHERE.
const latestRuns = (where: string) => `
  SELECT 1 AS finished, project_id, timestamp, id, 0 AS version, agent_name, status, finished_at, duration_ms,
         input, output, termination_reason, termination_detail, metadata, ${RUN_TOTALS}
  FROM runs WHERE ${where}
  UNION ALL
  SELECT 0 AS finished, project_id, timestamp, id, version, agent_name, 'running', timestamp, 0,
         input, '', '', '', metadata, ${RUN_TOTALS}
  FROM live_runs FINAL WHERE ${where}`;

// Many runs at once, by (project, start time, id): concurrent steps and finish calls share one lookup.
export const SELECT_LATEST_RUNS = latestRuns(
  `(project_id, timestamp, id) IN {keys:Array(Tuple(UUID, DateTime64(3, 'UTC'), UUID))}`,
);

// Without the start time a run is found by its id through the bloom-filter index of `runs`.
export const SELECT_LATEST_RUN_BY_ID = latestRuns('project_id = {project_id:UUID} AND id = {id:UUID}');

export const SELECT_STEPS = `
  SELECT project_id, run_timestamp, run_id, \`index\`, version, type, name, tool_name, model, input, output,
         tokens, input_tokens, output_tokens, cost_usd, started_at, duration_ms, error
  FROM run_steps FINAL
  WHERE project_id = {project_id:UUID} AND run_timestamp = {timestamp:DateTime64(3, 'UTC')} AND run_id = {id:UUID}
  ORDER BY \`index\``;
