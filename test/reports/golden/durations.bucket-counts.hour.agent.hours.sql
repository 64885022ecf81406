SELECT bucket_start,
  arraySort(groupArray(run_duration_bucket)) AS cells,
  arraySort((n, c) -> c, groupArray(runs), groupArray(run_duration_bucket)) AS counts
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
    SELECT toUnixTimestamp64Milli(toDateTime64(toStartOfInterval(run_timestamp, INTERVAL 1 HOUR, 'UTC'), 3, 'UTC')) AS bucket_start, run_duration_bucket, count() AS runs
    FROM runs
    WHERE project_id = {project_id:UUID}
      AND ((run_timestamp >= {previous_hours_start:DateTime64(3, 'UTC')} AND run_timestamp < {previous_hours_end:DateTime64(3, 'UTC')})
        OR (run_timestamp >= {current_hours_start:DateTime64(3, 'UTC')} AND run_timestamp < {current_hours_end:DateTime64(3, 'UTC')}))
      AND run_agent = {agent_name:String}
    GROUP BY bucket_start, run_duration_bucket
    SETTINGS preferred_optimize_projection_name = 'agent_duration_buckets')
)
GROUP BY bucket_start
