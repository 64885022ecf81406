SELECT timestamp, run_id AS id, live
FROM (
  SELECT timestamp, toString(id) AS run_id, true AS live
  FROM live_runs FINAL
  WHERE project_id = {project_id:UUID} AND timestamp >= {window_start:DateTime64(3, 'UTC')} AND timestamp < {window_end:DateTime64(3, 'UTC')}
  ORDER BY timestamp DESC, run_id DESC LIMIT {page_end:UInt64}
  UNION ALL
  SELECT timestamp, toString(id) AS run_id, false AS live
  FROM runs
  WHERE project_id = {project_id:UUID} AND timestamp >= {window_start:DateTime64(3, 'UTC')} AND timestamp < {window_end:DateTime64(3, 'UTC')}
  ORDER BY timestamp DESC LIMIT {page_end:UInt64} WITH TIES
)
ORDER BY timestamp DESC, run_id DESC, live
LIMIT 1 BY timestamp, run_id
LIMIT {limit:UInt64} OFFSET {offset:UInt64}
SETTINGS optimize_use_projections = 0, read_in_order_use_buffering = 0
