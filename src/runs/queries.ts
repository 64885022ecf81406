// SQL that reads single runs and their steps; every lookup is bounded by project and the run's start time.
const RUN_TOTALS = 'loop_detected, loop_step_index, total_steps, total_tokens, total_cost_usd, tool_calls, tool_names';
const LIVE_COLUMNS = `project_id, timestamp, id, version, agent_name, input, metadata, ${RUN_TOTALS}`;
const FINISHED_COLUMNS = `project_id, timestamp, id, agent_name, status, finished_at, duration_ms, input, output,
  termination_reason, termination_detail, metadata, ${RUN_TOTALS}`;

export const SELECT_FINISHED_RUN = `
  SELECT ${FINISHED_COLUMNS} FROM runs
  WHERE project_id = {project_id:UUID} AND timestamp = {timestamp:DateTime64(3)} AND id = {id:UUID}
  LIMIT 1`;

// FINAL here reads one run's few versions, not the table.
export const SELECT_LIVE_RUN = `
  SELECT ${LIVE_COLUMNS} FROM live_runs FINAL
  WHERE project_id = {project_id:UUID} AND timestamp = {timestamp:DateTime64(3)} AND id = {id:UUID}
  LIMIT 1`;

// Without the start time a run is found by its id through the tables' bloom-filter index.
export const SELECT_FINISHED_RUN_BY_ID = `
  SELECT ${FINISHED_COLUMNS} FROM runs WHERE project_id = {project_id:UUID} AND id = {id:UUID} LIMIT 1`;

export const SELECT_LIVE_RUN_BY_ID = `
  SELECT ${LIVE_COLUMNS} FROM live_runs FINAL WHERE project_id = {project_id:UUID} AND id = {id:UUID} LIMIT 1`;

export const SELECT_STEPS = `
  SELECT project_id, run_timestamp, run_id, \`index\`, version, type, name, tool_name, model, input, output,
         tokens, cost_usd, started_at, duration_ms, error
  FROM run_steps FINAL
  WHERE project_id = {project_id:UUID} AND run_timestamp = {timestamp:DateTime64(3)} AND run_id = {id:UUID}
  ORDER BY \`index\``;

// Finished runs among a set of (start time, id) pairs, for de-duplicating whole runs sent twice.
export const SELECT_FINISHED_IDS = `
  SELECT toString(id) AS id FROM runs
  WHERE project_id = {project_id:UUID}
    AND timestamp BETWEEN {from:DateTime64(3)} AND {to:DateTime64(3)}
    AND id IN {ids:Array(UUID)}`;
