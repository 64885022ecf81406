SELECT is_current, finished,
  arrayMap((rank, at) -> (sorted[at], rank - if(at = 1, 0, cumulative[at - 1])),
    lower_ranks,
    arrayMap(rank -> arrayFirstIndex(reached -> reached >= rank, cumulative), lower_ranks)) AS lower_cells,
  arrayMap((rank, at) -> (sorted[at], rank - if(at = 1, 0, cumulative[at - 1])),
    upper_ranks,
    arrayMap(rank -> arrayFirstIndex(reached -> reached >= rank, cumulative), upper_ranks)) AS upper_cells,
  arrayMap(h -> h - toUInt64(h), positions) AS fractions
FROM (
  SELECT is_current,
    arraySort(groupArray(run_duration_bucket)) AS sorted,
    arrayCumSum(arraySort((count, key) -> key, groupArray(runs), groupArray(run_duration_bucket))) AS cumulative,
    cumulative[-1] AS finished,
    arrayMap(level -> level * (finished - 1) + 1, {levels:Array(Float64)}) AS positions,
    arrayMap(h -> least(toUInt64(h), finished), positions) AS lower_ranks,
    arrayMap(rank -> least(rank + 1, finished), lower_ranks) AS upper_ranks
  FROM (
    SELECT is_current, run_duration_bucket, sum(runs) AS runs
    FROM (
      SELECT * FROM (
        WITH
          toStartOfDay(timestamp) AS run_timestamp,
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
        SELECT run_timestamp >= {current_start:DateTime64(3, 'UTC')} AS is_current, run_duration_bucket, count() AS runs
        FROM runs
        WHERE project_id = {project_id:UUID}
          AND ((run_timestamp >= {previous_days_start:DateTime64(3, 'UTC')} AND run_timestamp < {previous_days_end:DateTime64(3, 'UTC')})
            OR (run_timestamp >= {current_days_start:DateTime64(3, 'UTC')} AND run_timestamp < {current_days_end:DateTime64(3, 'UTC')}))
        GROUP BY is_current, run_duration_bucket
        SETTINGS preferred_optimize_projection_name = 'daily_duration_buckets')
      UNION ALL
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
        SELECT run_timestamp >= {current_start:DateTime64(3, 'UTC')} AS is_current, run_duration_bucket, count() AS runs
        FROM runs
        WHERE project_id = {project_id:UUID}
          AND ((run_timestamp >= {previous_hours_start:DateTime64(3, 'UTC')} AND run_timestamp < {previous_days_start:DateTime64(3, 'UTC')})
            OR (run_timestamp >= {previous_days_end:DateTime64(3, 'UTC')} AND run_timestamp < {previous_hours_end:DateTime64(3, 'UTC')})
            OR (run_timestamp >= {current_hours_start:DateTime64(3, 'UTC')} AND run_timestamp < {current_days_start:DateTime64(3, 'UTC')})
            OR (run_timestamp >= {current_days_end:DateTime64(3, 'UTC')} AND run_timestamp < {current_hours_end:DateTime64(3, 'UTC')}))
        GROUP BY is_current, run_duration_bucket
        SETTINGS preferred_optimize_projection_name = 'duration_buckets')
      UNION ALL
      SELECT * FROM (
        SELECT run_timestamp >= {current_start:DateTime64(3, 'UTC')} AS is_current, run_duration_bucket, count() AS runs
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
          LIMIT 18446744073709551615
        )
        GROUP BY is_current, run_duration_bucket))
    GROUP BY is_current, run_duration_bucket
  )
  GROUP BY is_current)
