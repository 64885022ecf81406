SELECT (SELECT count() FROM runs WHERE project_id = {project_id:UUID} AND timestamp >= {window_start:DateTime64(3, 'UTC')} AND timestamp < {window_end:DateTime64(3, 'UTC')}
  AND agent_name = {agent_name:String}) + (SELECT count() FROM live_runs FINAL WHERE project_id = {project_id:UUID} AND timestamp >= {window_start:DateTime64(3, 'UTC')} AND timestamp < {window_end:DateTime64(3, 'UTC')}
  AND (timestamp, id) NOT IN (
    SELECT timestamp, id FROM runs
    WHERE project_id = {project_id:UUID}
      AND (timestamp, id) IN (SELECT timestamp, id FROM live_runs FINAL WHERE project_id = {project_id:UUID} AND timestamp >= {window_start:DateTime64(3, 'UTC')} AND timestamp < {window_end:DateTime64(3, 'UTC')}))
  AND agent_name = {agent_name:String}) AS total
