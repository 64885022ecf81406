SELECT is_current,
  if(p_finished = 0, 0, p_duration_p95) AS duration_p95_ms,
  p_finished AS finished_runs
FROM (
  SELECT run_timestamp >= {current_start:DateTime64(3, 'UTC')} AS is_current,
    countIf(run_finished) AS p_finished,
    quantilesExactInclusiveIf(0.95)(run_duration_ms, run_finished) AS p_durations,
    p_durations[1] AS p_duration_p95
  FROM (
    SELECT
      timestamp AS run_timestamp,
      agent_name AS run_agent,
      true AS run_finished,
      status = 'completed' AS run_completed,
      loop_detected AS run_loop,
      total_cost_usd AS run_cost,
      total_tokens AS run_tokens,
      duration_ms AS run_duration_ms,
      total_steps AS run_steps,
      tool_calls AS run_tool_calls,
      tool_names AS run_tool_names
    FROM runs
    WHERE project_id = {project_id:UUID} AND timestamp >= {window_start:DateTime64(3, 'UTC')} AND timestamp < {window_end:DateTime64(3, 'UTC')}
  )
  GROUP BY is_current
)
