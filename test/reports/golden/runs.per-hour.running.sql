SELECT toStartOfHour(timestamp) AS hour, count() AS runs
FROM live_runs FINAL
WHERE project_id = {project_id:UUID} AND timestamp >= {window_start:DateTime64(3, 'UTC')} AND timestamp < {window_end:DateTime64(3, 'UTC')}
  AND (timestamp, id) NOT IN (
    SELECT timestamp, id FROM runs
    WHERE project_id = {project_id:UUID}
      AND inserted_at >= {stored_since:DateTime('UTC')}
      AND (timestamp, id) IN (SELECT timestamp, id FROM live_runs FINAL WHERE project_id = {project_id:UUID} AND timestamp >= {window_start:DateTime64(3, 'UTC')} AND timestamp < {window_end:DateTime64(3, 'UTC')}))
  AND agent_name = {agent_name:String}
  AND 'running' = {status:String}
  AND loop_detected = {loop_detected:Bool}
GROUP BY hour
SETTINGS optimize_use_projections = 0
