WITH
  toStartOfHour(timestamp) AS run_timestamp,
  agent_name AS run_agent,
  status = 'completed' AS run_completed,
  loop_detected AS run_loop,
  total_cost_usd AS run_cost,
  total_tokens AS run_tokens,
  duration_ms AS run_duration_ms,
  bitShiftLeft(bitShiftRight(duration_ms, toUInt8(greatest(log2(duration_ms), 5)) - 5), toUInt8(greatest(log2(duration_ms), 5)) - 5) AS run_duration_bucket,
  total_steps AS run_steps,
  tool_calls AS run_tool_calls,
  tool_names AS run_tool_names
SELECT run_timestamp >= {current_start:DateTime64(3, 'UTC')} AS is_current,
  count() AS p_runs,
  countIf(run_completed) AS p_completed,
  count() AS p_finished,
  countIf(run_loop) AS p_loops,
  sum(toDecimal128(least(run_cost, 1e14), 12)) AS p_cost,
  sum(run_tokens) AS p_tokens,
  sum(run_steps) AS p_steps,
  sum(run_tool_calls) AS p_tool_calls,
  groupUniqArray(run_agent) AS p_agent_names,
  groupUniqArrayArray(run_tool_names) AS p_tool_names
FROM runs
WHERE project_id = {project_id:UUID}
  AND ((run_timestamp >= {previous_hours_start:DateTime64(3, 'UTC')} AND run_timestamp < {previous_hours_end:DateTime64(3, 'UTC')})
    OR (run_timestamp >= {current_hours_start:DateTime64(3, 'UTC')} AND run_timestamp < {current_hours_end:DateTime64(3, 'UTC')}))
GROUP BY is_current
SETTINGS preferred_optimize_projection_name = 'hourly_all_agents', output_format_json_quote_decimals = 1
