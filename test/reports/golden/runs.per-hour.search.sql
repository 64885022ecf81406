SELECT hour, sum(runs) AS runs
FROM (
  SELECT toStartOfHour(timestamp) AS hour, count() AS runs
  FROM (
    SELECT timestamp
    FROM runs
    WHERE project_id = {project_id:UUID} AND timestamp >= {window_start:DateTime64(3, 'UTC')} AND timestamp < {window_end:DateTime64(3, 'UTC')} AND (timestamp < {hours_start:DateTime64(3, 'UTC')} OR timestamp >= {hours_end:DateTime64(3, 'UTC')})
      AND hasAll(tags, {tag:Array(String)})
      AND has(models, {model:String})
      AND duration_ms >= {min_duration_ms:UInt64}
      AND total_cost_usd <= {max_cost_usd:Float64}
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
    LIMIT 18446744073709551615)
  GROUP BY hour)
GROUP BY hour
