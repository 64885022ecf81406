WITH
  (SELECT min((timestamp, UUIDToNum(id))) FROM (
    SELECT timestamp, id FROM (SELECT timestamp, id
    FROM runs
    WHERE project_id = {project_id:UUID} AND timestamp >= {window_start:DateTime64(3, 'UTC')} AND timestamp < {window_end:DateTime64(3, 'UTC')}
     AND timestamp >= {newest_hours_from:DateTime64(3, 'UTC')}
    UNION ALL
    SELECT timestamp, id
    FROM live_runs FINAL
    WHERE project_id = {project_id:UUID} AND timestamp >= {window_start:DateTime64(3, 'UTC')} AND timestamp < {window_end:DateTime64(3, 'UTC')}
      AND (timestamp, id) NOT IN (
        SELECT timestamp, id FROM runs
        WHERE project_id = {project_id:UUID}
          AND inserted_at >= {stored_since:DateTime('UTC')}
          AND (timestamp, id) IN (SELECT timestamp, id FROM live_runs FINAL WHERE project_id = {project_id:UUID} AND timestamp >= {window_start:DateTime64(3, 'UTC')} AND timestamp < {window_end:DateTime64(3, 'UTC')}))
     AND timestamp >= {newest_hours_from:DateTime64(3, 'UTC')})
    ORDER BY timestamp DESC, UUIDToNum(id) DESC
    LIMIT {limit:UInt64})) AS last,
  exported AS (
    SELECT * FROM (SELECT `timestamp`, `project_id`, `id`, `agent_name`, `input`, `metadata`, `loop_detected`, `loop_step_index`, `total_steps`, `total_tokens`, `total_cost_usd`, `tool_calls`, `tool_names`, `session_id`, `user_id`, `tags`, `models`, `status`, `finished_at`, `duration_ms`, `output`, `termination_reason`, `termination_detail`
    FROM runs
    WHERE project_id = {project_id:UUID} AND timestamp >= {window_start:DateTime64(3, 'UTC')} AND timestamp < {window_end:DateTime64(3, 'UTC')}
     AND timestamp >= last.1 AND (timestamp, UUIDToNum(id)) >= last
    UNION ALL
    SELECT `timestamp`, `project_id`, `id`, `agent_name`, `input`, `metadata`, `loop_detected`, `loop_step_index`, `total_steps`, `total_tokens`, `total_cost_usd`, `tool_calls`, `tool_names`, `session_id`, `user_id`, `tags`, `models`, 'running' AS status, toDateTime64(0, 3, 'UTC') AS finished_at, toUInt64(0) AS duration_ms, '' AS output, '' AS termination_reason, '' AS termination_detail
    FROM live_runs FINAL
    WHERE project_id = {project_id:UUID} AND timestamp >= {window_start:DateTime64(3, 'UTC')} AND timestamp < {window_end:DateTime64(3, 'UTC')}
      AND (timestamp, id) NOT IN (
        SELECT timestamp, id FROM runs
        WHERE project_id = {project_id:UUID}
          AND inserted_at >= {stored_since:DateTime('UTC')}
          AND (timestamp, id) IN (SELECT timestamp, id FROM live_runs FINAL WHERE project_id = {project_id:UUID} AND timestamp >= {window_start:DateTime64(3, 'UTC')} AND timestamp < {window_end:DateTime64(3, 'UTC')}))
     AND timestamp >= last.1 AND (timestamp, UUIDToNum(id)) >= last)
    ORDER BY timestamp DESC, UUIDToNum(id) DESC)
SELECT
  toString(id) AS id,
  toString(project_id) AS project_id,
  toString(agent_name) AS agent_name,
  toString(status) AS status,
  concat(replaceOne(toString(timestamp), ' ', 'T'), 'Z') AS timestamp,
  if(status = 'running', NULL, concat(replaceOne(toString(finished_at), ' ', 'T'), 'Z')) AS finished_at,
  if(status = 'running', NULL, duration_ms) AS duration_ms,
  input,
  output,
  loop_detected,
  loop_step_index,
  if(status = 'running', NULL, toString(termination_reason)) AS termination_reason,
  if(status = 'running' OR termination_detail = '', NULL, termination_detail) AS termination_detail,
  total_steps,
  total_tokens,
  total_cost_usd,
  toJSONString(metadata) AS metadata,
  nullIf(session_id, '') AS session_id,
  nullIf(user_id, '') AS user_id,
  toJSONString(tags) AS tags
FROM exported
