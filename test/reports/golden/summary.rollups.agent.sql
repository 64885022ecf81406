SELECT is_current,
  p_runs AS total_runs,
  p_completed AS completed_runs,
  if(p_finished = 0, 0, p_completed / p_finished) AS completion_rate,
  p_loops AS loop_runs,
  if(p_runs = 0, 0, p_loops / p_runs) AS loop_rate,
  if(p_finished = 0, 0, toFloat64(p_cost) / p_finished) AS avg_cost_usd,
  if(p_finished = 0, 0, p_tokens / p_finished) AS avg_tokens,
  p_steps AS total_steps,
  p_tool_calls AS total_tool_calls,
  length(p_agent_names) AS unique_agents,
  length(p_tool_names) AS unique_tools
FROM (
  SELECT is_current,
    sum(p_runs) AS p_runs,
    sum(p_completed) AS p_completed,
    sum(p_finished) AS p_finished,
    sum(p_loops) AS p_loops,
    sum(p_cost) AS p_cost,
    sum(p_tokens) AS p_tokens,
    sum(p_steps) AS p_steps,
    sum(p_tool_calls) AS p_tool_calls,
    groupUniqArrayArray(p_agent_names) AS p_agent_names,
    groupUniqArrayArray(p_tool_names) AS p_tool_names
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
        AND run_agent = {agent_name:String}
      GROUP BY is_current
      SETTINGS preferred_optimize_projection_name = 'hourly')
    UNION ALL
    SELECT * FROM (
      SELECT run_timestamp >= {current_start:DateTime64(3, 'UTC')} AS is_current,
        count() AS p_runs,
        countIf(run_completed) AS p_completed,
        countIf(run_finished) AS p_finished,
        countIf(run_loop) AS p_loops,
        sumIf(toDecimal128(least(run_cost, 1e14), 12), run_finished) AS p_cost,
        sumIf(run_tokens, run_finished) AS p_tokens,
        sum(run_steps) AS p_steps,
        sum(run_tool_calls) AS p_tool_calls,
        groupUniqArray(run_agent) AS p_agent_names,
        groupUniqArrayArray(run_tool_names) AS p_tool_names
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
      ) WHERE run_agent = {agent_name:String}
      GROUP BY is_current))
  GROUP BY is_current
) AS partials
