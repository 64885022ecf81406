SELECT
  (SELECT count() FROM runs
   WHERE indexHint(project_id = {project_id:UUID} AND timestamp >= {window_start:DateTime64(3, 'UTC')} AND timestamp < {window_end:DateTime64(3, 'UTC')})
     AND hasAll(tags, {tag:Array(String)})
     AND has(tool_names, {tool_name:String})
     AND duration_ms >= {min_duration_ms:UInt64}
     AND total_cost_usd <= {max_cost_usd:Float64})
  - (SELECT count() FROM runs
     WHERE indexHint(project_id = {project_id:UUID} AND timestamp >= {window_start:DateTime64(3, 'UTC')} AND timestamp < {window_end:DateTime64(3, 'UTC')})
       AND hasAll(tags, {tag:Array(String)})
       AND has(tool_names, {tool_name:String})
       AND duration_ms >= {min_duration_ms:UInt64}
       AND total_cost_usd <= {max_cost_usd:Float64}
       AND NOT (project_id = {project_id:UUID} AND timestamp >= {window_start:DateTime64(3, 'UTC')} AND timestamp < {window_end:DateTime64(3, 'UTC')})) AS runs
SETTINGS optimize_use_projections = 0
