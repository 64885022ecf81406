SELECT toStartOfHour(timestamp) AS hour, count() AS runs
FROM runs
WHERE project_id = {project_id:UUID} AND timestamp >= {hours_start:DateTime64(3, 'UTC')} AND timestamp < {hours_end:DateTime64(3, 'UTC')}
  AND hasAll(tags, {tag:Array(String)})
  AND has(tool_names, {tool_name:String})
  AND duration_ms >= {min_duration_ms:UInt64}
  AND total_cost_usd <= {max_cost_usd:Float64}
GROUP BY hour
SETTINGS optimize_use_projections = 0
