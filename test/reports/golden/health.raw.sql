SELECT agent_name, is_current,
  p_runs AS total_runs,
  p_completed AS completed_runs,
  if(p_finished = 0, 0, p_completed / p_finished) AS completion_rate,
  p_loops AS loop_runs,
  if(p_runs = 0, 0, p_loops / p_runs) AS loop_rate,
  if(p_finished = 0, 0, toFloat64(p_cost) / p_finished) AS avg_cost_usd,
  if(p_finished = 0, 0, p_tokens / p_finished) AS avg_tokens
FROM (
  SELECT run_timestamp >= {current_start:DateTime64(3, 'UTC')} AS is_current, run_agent AS agent_name,
    count() AS p_runs,
    countIf(run_completed) AS p_completed,
    countIf(run_finished) AS p_finished,
    countIf(run_loop) AS p_loops,
    sumIf(toDecimal128(least(run_cost, 1e14), 12), run_finished) AS p_cost,
    sumIf(run_tokens, run_finished) AS p_tokens
  FROM (
    SELECT
      timestamp AS run_timestamp,
      agent_name AS run_agent,
      user_id AS run_user,
      true AS run_finished,
      status = 'completed' AS run_completed,
      loop_detected AS run_loop,
      total_cost_usd AS run_cost,
      total_tokens AS run_tokens,
      duration_ms AS run_duration_ms,
      bitShiftLeft(bitShiftRight(duration_ms, toUInt8(greatest(log2(duration_ms), 5)) - 5), toUInt8(greatest(log2(duration_ms), 5)) - 5) AS run_duration_bucket,
      total_steps AS run_steps,
      tool_calls AS run_tool_calls,
      tool_names AS run_tool_names
    FROM runs
    WHERE project_id = {project_id:UUID} AND timestamp >= {window_start:DateTime64(3, 'UTC')} AND timestamp < {window_end:DateTime64(3, 'UTC')}
    UNION ALL
    SELECT timestamp, agent_name, user_id, false, false, loop_detected, total_cost_usd, total_tokens, toUInt64(0), toUInt64(0), total_steps, tool_calls, tool_names
    FROM live_runs FINAL
    WHERE project_id = {project_id:UUID} AND timestamp >= {window_start:DateTime64(3, 'UTC')} AND timestamp < {window_end:DateTime64(3, 'UTC')}
      AND (timestamp, id) NOT IN (
        SELECT timestamp, id FROM runs
        WHERE project_id = {project_id:UUID}
          AND inserted_at >= {stored_since:DateTime('UTC')}
          AND (timestamp, id) IN (SELECT timestamp, id FROM live_runs FINAL WHERE project_id = {project_id:UUID} AND timestamp >= {window_start:DateTime64(3, 'UTC')} AND timestamp < {window_end:DateTime64(3, 'UTC')}))
  )
  GROUP BY is_current, agent_name
)
SETTINGS optimize_use_projections = 0
