SELECT sum(run_values) / sum(runs) AS value, sum(runs) AS sample_count
FROM (
  SELECT runs, run_values
  FROM score_run_values
  WHERE project_id = {project_id:UUID}
    AND name = {name:String}
    AND agent_name = {agent_name:String}
    AND run_hour >= {hours_start:DateTime64(3, 'UTC')} AND run_hour < {hours_end:DateTime64(3, 'UTC')}
  UNION ALL
  SELECT toInt64(1) AS runs, avg(value) AS run_values
  FROM latest_scores FINAL
  WHERE project_id = {project_id:UUID}
    AND name = {name:String}
    AND agent_name = {agent_name:String}
    AND run_timestamp >= {window_start:DateTime64(3, 'UTC')} AND run_timestamp < {window_end:DateTime64(3, 'UTC')}
    AND (run_timestamp < {hours_start:DateTime64(3, 'UTC')} OR run_timestamp >= {hours_end:DateTime64(3, 'UTC')})
    AND data_type != 'categorical'
  GROUP BY run_timestamp, run_id
)
