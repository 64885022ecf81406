SELECT is_current, run_duration_bucket, ranks,
  arrayMap(rank -> sorted[arrayFirstIndex(reached -> reached >= rank, cumulative)], ranks) AS durations
FROM (
  SELECT is_current, run_duration_bucket,
    arraySort(groupArray(run_duration_ms)) AS sorted,
    arrayCumSum(arraySort((count, key) -> key, groupArray(runs), groupArray(run_duration_ms))) AS cumulative
  FROM (
    SELECT is_current, run_duration_bucket, run_duration_ms, sum(runs) AS runs
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
        SELECT run_timestamp >= {current_start:DateTime64(3, 'UTC')} AS is_current, run_duration_bucket, run_duration_ms, count() AS runs
        FROM runs
        WHERE project_id = {project_id:UUID}
          AND ((run_timestamp >= {previous_days_start:DateTime64(3, 'UTC')} AND run_timestamp < {previous_days_end:DateTime64(3, 'UTC')})
            OR (run_timestamp >= {current_days_start:DateTime64(3, 'UTC')} AND run_timestamp < {current_days_end:DateTime64(3, 'UTC')}))
          AND run_duration_bucket IN {buckets:Array(Int64)}
          AND (is_current, run_duration_bucket) IN {cells:Array(Tuple(UInt8, Int64))}
        GROUP BY is_current, run_duration_bucket, run_duration_ms
        SETTINGS preferred_optimize_projection_name = 'daily_duration_values')
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
        SELECT run_timestamp >= {current_start:DateTime64(3, 'UTC')} AS is_current, run_duration_bucket, run_duration_ms, count() AS runs
        FROM runs
        WHERE project_id = {project_id:UUID}
          AND ((run_timestamp >= {previous_hours_start:DateTime64(3, 'UTC')} AND run_timestamp < {previous_days_start:DateTime64(3, 'UTC')})
            OR (run_timestamp >= {previous_days_end:DateTime64(3, 'UTC')} AND run_timestamp < {previous_hours_end:DateTime64(3, 'UTC')})
            OR (run_timestamp >= {current_hours_start:DateTime64(3, 'UTC')} AND run_timestamp < {current_days_start:DateTime64(3, 'UTC')})
            OR (run_timestamp >= {current_days_end:DateTime64(3, 'UTC')} AND run_timestamp < {current_hours_end:DateTime64(3, 'UTC')}))
          AND run_duration_bucket IN {buckets:Array(Int64)}
          AND (is_current, run_duration_bucket) IN {cells:Array(Tuple(UInt8, Int64))}
        GROUP BY is_current, run_duration_bucket, run_duration_ms
        SETTINGS preferred_optimize_projection_name = 'duration_values')
      UNION ALL
      SELECT * FROM (
        SELECT run_timestamp >= {current_start:DateTime64(3, 'UTC')} AS is_current, run_duration_bucket, run_duration_ms, count() AS runs
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
        ) WHERE run_duration_bucket IN {buckets:Array(Int64)} AND (is_current, run_duration_bucket) IN {cells:Array(Tuple(UInt8, Int64))}
        GROUP BY is_current, run_duration_bucket, run_duration_ms))
    GROUP BY is_current, run_duration_bucket, run_duration_ms
  )
  GROUP BY is_current, run_duration_bucket
) AS found
INNER JOIN (
  SELECT tupleElement(cell, 1) AS is_current, tupleElement(cell, 2) AS run_duration_bucket, ranks
  FROM system.one
  ARRAY JOIN {cells:Array(Tuple(UInt8, Int64))} AS cell, {ranks:Array(Array(UInt64))} AS ranks
) AS wanted USING (is_current, run_duration_bucket)
