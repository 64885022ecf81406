SELECT toStartOfHour(timestamp) AS hour, count() AS runs
FROM live_runs FINAL
WHERE project_id = {project_id:UUID} AND timestamp >= {window_start:DateTime64(3, 'UTC')} AND timestamp < {window_end:DateTime64(3, 'UTC')}
  AND (timestamp, id) NOT IN (
    SELECT timestamp, id FROM runs
    WHERE project_id = {project_id:UUID}
      AND inserted_at >= {stored_since:DateTime('UTC')}
      AND (timestamp, id) IN (SELECT timestamp, id FROM live_runs FINAL WHERE project_id = {project_id:UUID} AND timestamp >= {window_start:DateTime64(3, 'UTC')} AND timestamp < {window_end:DateTime64(3, 'UTC')}))
  AND hasAll(tags, {tag:Array(String)})
  AND has(models, {model:String})
  AND false
  AND total_cost_usd <= {max_cost_usd:Float64}
  AND (multiSearchAny(lowerUTF8(input), [lowerUTF8({q:String})])
    OR (timestamp, id) IN (
      SELECT run_timestamp, run_id FROM run_steps
      WHERE project_id = {project_id:UUID}
        AND (run_timestamp, run_id) IN (SELECT timestamp, id FROM live_runs WHERE project_id = {project_id:UUID} AND timestamp >= {window_start:DateTime64(3, 'UTC')} AND timestamp < {window_end:DateTime64(3, 'UTC')})
        AND multiSearchAny(lowerUTF8(concat(input, '\0', output, '\0', ifNull(error, ''))), [lowerUTF8({q:String})])))
GROUP BY hour
SETTINGS optimize_use_projections = 0
