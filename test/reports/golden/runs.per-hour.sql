SELECT hour, sum(runs) AS runs
FROM (
  SELECT * FROM (
    SELECT toStartOfHour(timestamp) AS hour, count() AS runs
    FROM runs
    WHERE project_id = {project_id:UUID} AND toStartOfHour(timestamp) >= {hours_start:DateTime64(3, 'UTC')} AND toStartOfHour(timestamp) < {hours_end:DateTime64(3, 'UTC')}
      AND agent_name = {agent_name:String}
      AND status = {status:String}
      AND loop_detected = {loop_detected:Bool}
    GROUP BY hour
    SETTINGS preferred_optimize_projection_name = 'run_counts')
  UNION ALL
  SELECT toStartOfHour(timestamp) AS hour, count() AS runs
  FROM (
    SELECT timestamp
    FROM runs
    WHERE project_id = {project_id:UUID} AND timestamp >= {window_start:DateTime64(3, 'UTC')} AND timestamp < {window_end:DateTime64(3, 'UTC')} AND (timestamp < {hours_start:DateTime64(3, 'UTC')} OR timestamp >= {hours_end:DateTime64(3, 'UTC')})
      AND agent_name = {agent_name:String}
      AND status = {status:String}
      AND loop_detected = {loop_detected:Bool}
    LIMIT 18446744073709551615)
  GROUP BY hour)
GROUP BY hour
