WITH
  (SELECT min((timestamp, UUIDToNum(id))) FROM (
    SELECT timestamp, id FROM (SELECT timestamp, id
    FROM runs
    WHERE project_id = {project_id:UUID} AND timestamp >= {window_start:DateTime64(3, 'UTC')} AND timestamp < {window_end:DateTime64(3, 'UTC')}
      AND hasAll(tags, {tag:Array(String)})
      AND (timestamp, id) IN (
        SELECT timestamp, id FROM runs
        WHERE project_id = {project_id:UUID} AND timestamp >= {window_start:DateTime64(3, 'UTC')} AND timestamp < {window_end:DateTime64(3, 'UTC')} AND multiSearchAny(lowerUTF8(concat(input, '\0', output, '\0', termination_detail)), [lowerUTF8({q:String})])
        UNION ALL
        SELECT timestamp, id FROM live_runs
        WHERE project_id = {project_id:UUID} AND timestamp >= {window_start:DateTime64(3, 'UTC')} AND timestamp < {window_end:DateTime64(3, 'UTC')} AND multiSearchAny(lowerUTF8(input), [lowerUTF8({q:String})])
        UNION ALL
        SELECT run_timestamp, run_id FROM run_steps
        WHERE project_id = {project_id:UUID}
          AND run_timestamp >= {window_start:DateTime64(3, 'UTC')} AND run_timestamp < {window_end:DateTime64(3, 'UTC')}
          AND multiSearchAny(lowerUTF8(concat(input, '\0', output, '\0', ifNull(error, ''))), [lowerUTF8({q:String})]))
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
      AND hasAll(tags, {tag:Array(String)})
      AND (multiSearchAny(lowerUTF8(input), [lowerUTF8({q:String})])
        OR (timestamp, id) IN (
          SELECT run_timestamp, run_id FROM run_steps
          WHERE project_id = {project_id:UUID}
            AND (run_timestamp, run_id) IN (SELECT timestamp, id FROM live_runs WHERE project_id = {project_id:UUID} AND timestamp >= {window_start:DateTime64(3, 'UTC')} AND timestamp < {window_end:DateTime64(3, 'UTC')})
            AND multiSearchAny(lowerUTF8(concat(input, '\0', output, '\0', ifNull(error, ''))), [lowerUTF8({q:String})])))
     AND timestamp >= {newest_hours_from:DateTime64(3, 'UTC')})
    ORDER BY timestamp DESC, UUIDToNum(id) DESC
    LIMIT {limit:UInt64})) AS last,
  exported AS (
    SELECT * FROM (SELECT `timestamp`, `project_id`, `id`, `agent_name`, `input`, `metadata`, `loop_detected`, `loop_step_index`, `total_steps`, `total_tokens`, `total_cost_usd`, `tool_calls`, `tool_names`, `session_id`, `user_id`, `tags`, `models`, `status`, `finished_at`, `duration_ms`, `output`, `termination_reason`, `termination_detail`
    FROM runs
    WHERE project_id = {project_id:UUID} AND timestamp >= {window_start:DateTime64(3, 'UTC')} AND timestamp < {window_end:DateTime64(3, 'UTC')}
      AND hasAll(tags, {tag:Array(String)})
      AND (timestamp, id) IN (
        SELECT timestamp, id FROM runs
        WHERE project_id = {project_id:UUID} AND timestamp >= {window_start:DateTime64(3, 'UTC')} AND timestamp < {window_end:DateTime64(3, 'UTC')} AND multiSearchAny(lowerUTF8(concat(input, '\0', output, '\0', termination_detail)), [lowerUTF8({q:String})])
        UNION ALL
        SELECT timestamp, id FROM live_runs
        WHERE project_id = {project_id:UUID} AND timestamp >= {window_start:DateTime64(3, 'UTC')} AND timestamp < {window_end:DateTime64(3, 'UTC')} AND multiSearchAny(lowerUTF8(input), [lowerUTF8({q:String})])
        UNION ALL
        SELECT run_timestamp, run_id FROM run_steps
        WHERE project_id = {project_id:UUID}
          AND run_timestamp >= {window_start:DateTime64(3, 'UTC')} AND run_timestamp < {window_end:DateTime64(3, 'UTC')}
          AND multiSearchAny(lowerUTF8(concat(input, '\0', output, '\0', ifNull(error, ''))), [lowerUTF8({q:String})]))
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
      AND hasAll(tags, {tag:Array(String)})
      AND (multiSearchAny(lowerUTF8(input), [lowerUTF8({q:String})])
        OR (timestamp, id) IN (
          SELECT run_timestamp, run_id FROM run_steps
          WHERE project_id = {project_id:UUID}
            AND (run_timestamp, run_id) IN (SELECT timestamp, id FROM live_runs WHERE project_id = {project_id:UUID} AND timestamp >= {window_start:DateTime64(3, 'UTC')} AND timestamp < {window_end:DateTime64(3, 'UTC')})
            AND multiSearchAny(lowerUTF8(concat(input, '\0', output, '\0', ifNull(error, ''))), [lowerUTF8({q:String})])))
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
  CAST(metadata, 'Array(Float64)') AS metadata,
  nullIf(session_id, '') AS session_id,
  nullIf(user_id, '') AS user_id,
  CAST(tags, 'Array(String)') AS tags,
  run_steps.steps AS steps
FROM exported
LEFT JOIN (
  SELECT run_timestamp, run_id, arraySort(step -> step.index, groupArray(CAST((`index`, toString(type), name, tool_name, toString(model), input, output, tokens, input_tokens, output_tokens, cost_usd, if(started_at IS NULL, NULL, concat(replaceOne(toString(assumeNotNull(started_at)), ' ', 'T'), 'Z')), duration_ms, error), 'Tuple(index UInt32, type String, name Nullable(String), tool_name Nullable(String), model Nullable(String), input String, output String, tokens Nullable(UInt64), input_tokens Nullable(UInt64), output_tokens Nullable(UInt64), cost_usd Nullable(Float64), started_at Nullable(String), duration_ms Nullable(UInt64), error Nullable(String))'))) AS steps
  FROM run_steps FINAL
  WHERE project_id = {project_id:UUID}
    AND run_timestamp >= {window_start:DateTime64(3, 'UTC')} AND run_timestamp < {window_end:DateTime64(3, 'UTC')}
  GROUP BY run_timestamp, run_id
) AS run_steps ON run_steps.run_timestamp = exported.timestamp AND run_steps.run_id = exported.id
ORDER BY exported.timestamp DESC, UUIDToNum(exported.id) DESC
