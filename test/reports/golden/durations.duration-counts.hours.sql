SELECT is_current, run_duration_bucket,
  arraySort(groupArray(run_duration_ms)) AS cells,
  arraySort((n, c) -> c, groupArray(runs), groupArray(run_duration_ms)) AS counts
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
)
GROUP BY is_current, run_duration_bucket
