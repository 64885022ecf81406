SELECT timestamp, run_id AS id, live, (SELECT count() FROM runs WHERE project_id = {project_id:UUID} AND timestamp >= {window_start:DateTime64(3, 'UTC')} AND timestamp < {window_end:DateTime64(3, 'UTC')}
  AND agent_name = {agent_name:String}
  AND status = {status:String}
  AND loop_detected = {loop_detected:Bool}) + max(live_total) OVER () AS total
FROM (
  SELECT timestamp, toString(id) AS run_id, true AS live, count() OVER () AS live_total
  FROM live_runs FINAL WHERE project_id = {project_id:UUID} AND timestamp >= {window_start:DateTime64(3, 'UTC')} AND timestamp < {window_end:DateTime64(3, 'UTC')}
    AND (timestamp, id) NOT IN (
      SELECT timestamp, id FROM runs
      WHERE project_id = {project_id:UUID}
        AND (timestamp, id) IN (SELECT timestamp, id FROM live_runs FINAL WHERE project_id = {project_id:UUID} AND timestamp >= {window_start:DateTime64(3, 'UTC')} AND timestamp < {window_end:DateTime64(3, 'UTC')}))
    AND agent_name = {agent_name:String}
    AND 'running' = {status:String}
    AND loop_detected = {loop_detected:Bool}
  ORDER BY timestamp DESC, run_id DESC LIMIT {page_end:UInt64}
  UNION ALL
  SELECT timestamp, toString(id) AS run_id, false AS live, 0 AS live_total FROM runs
  WHERE project_id = {project_id:UUID} AND timestamp >= {window_start:DateTime64(3, 'UTC')} AND timestamp < {window_end:DateTime64(3, 'UTC')}
    AND agent_name = {agent_name:String}
    AND status = {status:String}
    AND loop_detected = {loop_detected:Bool}
  ORDER BY timestamp DESC LIMIT {page_end:UInt64} WITH TIES
)
ORDER BY timestamp DESC, run_id DESC
LIMIT {limit:UInt64} OFFSET {offset:UInt64}
SETTINGS read_in_order_use_buffering = 0
