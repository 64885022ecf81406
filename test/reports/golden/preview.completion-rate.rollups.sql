SELECT is_current,
  if(p_finished = 0, 0, p_completed / p_finished) AS completion_rate,
  p_finished AS finished_runs
FROM (
  SELECT is_current,
    sum(p_finished) AS p_finished,
    sum(p_completed) AS p_completed
  FROM (
    SELECT * FROM (
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
        count() AS p_finished,
        countIf(run_completed) AS p_completed
      FROM runs
      WHERE project_id = {project_id:UUID}
        AND ((run_timestamp >= {previous_hours_start:DateTime64(3, 'UTC')} AND run_timestamp < {previous_hours_end:DateTime64(3, 'UTC')})
          OR (run_timestamp >= {current_hours_start:DateTime64(3, 'UTC')} AND run_timestamp < {current_hours_end:DateTime64(3, 'UTC')}))
      GROUP BY is_current
      SETTINGS preferred_optimize_projection_name = 'hourly_all_agents')
    UNION ALL
    SELECT * FROM (
      SELECT run_timestamp >= {current_start:DateTime64(3, 'UTC')} AS is_current,
        countIf(run_finished) AS p_finished,
        countIf(run_completed) AS p_completed
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
          AND (timestamp < {previous_hours_start:DateTime64(3, 'UTC')}
            OR (timestamp >= {previous_hours_end:DateTime64(3, 'UTC')} AND timestamp < {current_hours_start:DateTime64(3, 'UTC')})
            OR timestamp >= {current_hours_end:DateTime64(3, 'UTC')})
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
      GROUP BY is_current))
  GROUP BY is_current
) AS partials
