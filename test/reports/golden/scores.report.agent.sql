SELECT name, type, count, prev_count, mean, prev_mean, below + (middle - floor(middle)) * (above - below) AS p50,
  labels
FROM (
  SELECT name, any(data_type) AS type,
    sumIf(weight, is_current) AS count,
    sumIf(weight, NOT is_current) AS prev_count,
    sumIf(value * weight, is_current) / count AS mean,
    sumIf(value * weight, NOT is_current) / prev_count AS prev_mean,
    arraySort(groupArrayIf((value, weight), is_current AND data_type = 'numeric')) AS distribution,
    arrayCumSum(arrayMap(counted -> counted.2, distribution)) AS running_counts,
    (count - 1) / 2 AS middle,
    distribution[arrayFirstIndex(running -> running > floor(middle), running_counts)].1 AS below,
    distribution[arrayFirstIndex(running -> running > ceil(middle), running_counts)].1 AS above,
    sumMapIf([label], [weight], is_current AND data_type = 'categorical') AS labels
  FROM (
    SELECT name, data_type, value, label, is_current, sum(scores) AS weight
    FROM (
      SELECT name, data_type, value, label, run_day >= {current_start:DateTime64(3, 'UTC')} AS is_current, scores
      FROM daily_score_rollups
      WHERE project_id = {project_id:UUID}
        AND ((run_day >= {previous_days_start:DateTime64(3, 'UTC')} AND run_day < {previous_days_end:DateTime64(3, 'UTC')})
          OR (run_day >= {current_days_start:DateTime64(3, 'UTC')} AND run_day < {current_days_end:DateTime64(3, 'UTC')}))
        AND agent_name = {agent_name:String}
      UNION ALL
      SELECT name, data_type, value, label, run_hour >= {current_start:DateTime64(3, 'UTC')} AS is_current, scores
      FROM score_rollups
      WHERE project_id = {project_id:UUID}
        AND ((run_hour >= {previous_hours_start:DateTime64(3, 'UTC')} AND run_hour < {previous_days_start:DateTime64(3, 'UTC')})
          OR (run_hour >= {previous_days_end:DateTime64(3, 'UTC')} AND run_hour < {previous_hours_end:DateTime64(3, 'UTC')})
          OR (run_hour >= {current_hours_start:DateTime64(3, 'UTC')} AND run_hour < {current_days_start:DateTime64(3, 'UTC')})
          OR (run_hour >= {current_days_end:DateTime64(3, 'UTC')} AND run_hour < {current_hours_end:DateTime64(3, 'UTC')}))
        AND agent_name = {agent_name:String}
      UNION ALL
      SELECT name, data_type, value, label, run_timestamp >= {current_start:DateTime64(3, 'UTC')} AS is_current,
             toInt64(1) AS scores
      FROM latest_scores FINAL
      WHERE project_id = {project_id:UUID}
        AND agent_name = {agent_name:String}
        AND run_timestamp >= {window_start:DateTime64(3, 'UTC')}
        AND run_timestamp < {window_end:DateTime64(3, 'UTC')}
        AND (run_timestamp < {previous_hours_start:DateTime64(3, 'UTC')}
          OR (run_timestamp >= {previous_hours_end:DateTime64(3, 'UTC')} AND run_timestamp < {current_hours_start:DateTime64(3, 'UTC')})
          OR run_timestamp >= {current_hours_end:DateTime64(3, 'UTC')})
    )
    GROUP BY name, data_type, value, label, is_current
    HAVING weight != 0
  )
  GROUP BY name
  HAVING count > 0
)
ORDER BY name
