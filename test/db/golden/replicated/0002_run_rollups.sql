ALTER TABLE runs ON CLUSTER runwatch MODIFY SETTING deduplicate_merge_projection_mode = 'rebuild';

ALTER TABLE runs ON CLUSTER runwatch ADD PROJECTION IF NOT EXISTS hourly (
  SELECT project_id, toStartOfHour(timestamp), agent_name,
         count(),
         countIf(status = 'completed'),
         countIf(loop_detected),
         sum(toDecimal128(least(total_cost_usd, 1e14), 12)),
         sum(total_tokens),
         sum(total_steps),
         sum(tool_calls),
         groupUniqArray(agent_name),
         groupUniqArrayArray(tool_names)
  GROUP BY project_id, toStartOfHour(timestamp), agent_name
);

ALTER TABLE runs ON CLUSTER runwatch MATERIALIZE PROJECTION hourly SETTINGS mutations_sync = 2;
