SELECT `timestamp`, `project_id`, `id`, `agent_name`, `input`, `metadata`, `loop_detected`, `loop_step_index`, `total_steps`, `total_tokens`, `total_cost_usd`, `tool_calls`, `tool_names`, `session_id`, `user_id`, `tags`, `models`, `status`, `finished_at`, `duration_ms`, `output`, `termination_reason`, `termination_detail`
FROM runs
WHERE project_id = {project_id:UUID}
  AND timestamp >= {finished_first:DateTime64(3, 'UTC')} AND timestamp <= {finished_last:DateTime64(3, 'UTC')}
  AND id IN {finished_ids:Array(UUID)}
UNION ALL
SELECT `timestamp`, `project_id`, `id`, `agent_name`, `input`, `metadata`, `loop_detected`, `loop_step_index`, `total_steps`, `total_tokens`, `total_cost_usd`, `tool_calls`, `tool_names`, `session_id`, `user_id`, `tags`, `models`, 'running' AS status, toDateTime64(0, 3, 'UTC') AS finished_at, toUInt64(0) AS duration_ms, '' AS output, '' AS termination_reason, '' AS termination_detail
FROM live_runs FINAL
WHERE project_id = {project_id:UUID}
  AND timestamp >= {live_first:DateTime64(3, 'UTC')} AND timestamp <= {live_last:DateTime64(3, 'UTC')}
  AND id IN {live_ids:Array(UUID)}
