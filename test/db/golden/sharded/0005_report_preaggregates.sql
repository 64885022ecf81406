ALTER TABLE runs_local ON CLUSTER runwatch ADD PROJECTION IF NOT EXISTS hourly_all_agents (
  SELECT project_id, toStartOfHour(timestamp),
         count(),
         countIf(status = 'completed'),
         countIf(loop_detected),
         sum(toDecimal128(least(total_cost_usd, 1e14), 12)),
         sum(total_tokens),
         sum(total_steps),
         sum(tool_calls),
         groupUniqArray(agent_name),
         groupUniqArrayArray(tool_names)
  GROUP BY project_id, toStartOfHour(timestamp)
);

ALTER TABLE runs_local ON CLUSTER runwatch ADD PROJECTION IF NOT EXISTS run_counts (
  SELECT project_id, toStartOfHour(timestamp), agent_name, status, loop_detected, count()
  GROUP BY project_id, toStartOfHour(timestamp), agent_name, status, loop_detected
);

ALTER TABLE runs_local ON CLUSTER runwatch ADD PROJECTION IF NOT EXISTS duration_buckets (
  SELECT project_id, toStartOfHour(timestamp),
         bitShiftLeft(bitShiftRight(duration_ms, toUInt8(greatest(log2(duration_ms), 5)) - 5), toUInt8(greatest(log2(duration_ms), 5)) - 5),
         count()
  GROUP BY project_id, toStartOfHour(timestamp),
           bitShiftLeft(bitShiftRight(duration_ms, toUInt8(greatest(log2(duration_ms), 5)) - 5), toUInt8(greatest(log2(duration_ms), 5)) - 5)
);

ALTER TABLE runs_local ON CLUSTER runwatch ADD PROJECTION IF NOT EXISTS agent_duration_buckets (
  SELECT project_id, agent_name, toStartOfHour(timestamp),
         bitShiftLeft(bitShiftRight(duration_ms, toUInt8(greatest(log2(duration_ms), 5)) - 5), toUInt8(greatest(log2(duration_ms), 5)) - 5),
         count()
  GROUP BY project_id, agent_name, toStartOfHour(timestamp),
           bitShiftLeft(bitShiftRight(duration_ms, toUInt8(greatest(log2(duration_ms), 5)) - 5), toUInt8(greatest(log2(duration_ms), 5)) - 5)
);

ALTER TABLE runs_local ON CLUSTER runwatch ADD PROJECTION IF NOT EXISTS duration_values (
  SELECT project_id,
         bitShiftLeft(bitShiftRight(duration_ms, toUInt8(greatest(log2(duration_ms), 5)) - 5), toUInt8(greatest(log2(duration_ms), 5)) - 5),
         toStartOfHour(timestamp), duration_ms, count()
  GROUP BY project_id,
           bitShiftLeft(bitShiftRight(duration_ms, toUInt8(greatest(log2(duration_ms), 5)) - 5), toUInt8(greatest(log2(duration_ms), 5)) - 5),
           toStartOfHour(timestamp), duration_ms
);

ALTER TABLE runs_local ON CLUSTER runwatch ADD PROJECTION IF NOT EXISTS agent_duration_values (
  SELECT project_id, agent_name,
         bitShiftLeft(bitShiftRight(duration_ms, toUInt8(greatest(log2(duration_ms), 5)) - 5), toUInt8(greatest(log2(duration_ms), 5)) - 5),
         toStartOfHour(timestamp), duration_ms, count()
  GROUP BY project_id, agent_name,
           bitShiftLeft(bitShiftRight(duration_ms, toUInt8(greatest(log2(duration_ms), 5)) - 5), toUInt8(greatest(log2(duration_ms), 5)) - 5),
           toStartOfHour(timestamp), duration_ms
);

ALTER TABLE runs_local ON CLUSTER runwatch ADD PROJECTION IF NOT EXISTS daily_duration_buckets (
  SELECT project_id, toStartOfDay(timestamp),
         bitShiftLeft(bitShiftRight(duration_ms, toUInt8(greatest(log2(duration_ms), 5)) - 5), toUInt8(greatest(log2(duration_ms), 5)) - 5),
         count()
  GROUP BY project_id, toStartOfDay(timestamp),
           bitShiftLeft(bitShiftRight(duration_ms, toUInt8(greatest(log2(duration_ms), 5)) - 5), toUInt8(greatest(log2(duration_ms), 5)) - 5)
);

ALTER TABLE runs_local ON CLUSTER runwatch ADD PROJECTION IF NOT EXISTS daily_agent_duration_buckets (
  SELECT project_id, agent_name, toStartOfDay(timestamp),
         bitShiftLeft(bitShiftRight(duration_ms, toUInt8(greatest(log2(duration_ms), 5)) - 5), toUInt8(greatest(log2(duration_ms), 5)) - 5),
         count()
  GROUP BY project_id, agent_name, toStartOfDay(timestamp),
           bitShiftLeft(bitShiftRight(duration_ms, toUInt8(greatest(log2(duration_ms), 5)) - 5), toUInt8(greatest(log2(duration_ms), 5)) - 5)
);

ALTER TABLE runs_local ON CLUSTER runwatch ADD PROJECTION IF NOT EXISTS daily_duration_values (
  SELECT project_id,
         bitShiftLeft(bitShiftRight(duration_ms, toUInt8(greatest(log2(duration_ms), 5)) - 5), toUInt8(greatest(log2(duration_ms), 5)) - 5),
         toStartOfDay(timestamp), duration_ms, count()
  GROUP BY project_id,
           bitShiftLeft(bitShiftRight(duration_ms, toUInt8(greatest(log2(duration_ms), 5)) - 5), toUInt8(greatest(log2(duration_ms), 5)) - 5),
           toStartOfDay(timestamp), duration_ms
);

ALTER TABLE runs_local ON CLUSTER runwatch ADD PROJECTION IF NOT EXISTS daily_agent_duration_values (
  SELECT project_id, agent_name,
         bitShiftLeft(bitShiftRight(duration_ms, toUInt8(greatest(log2(duration_ms), 5)) - 5), toUInt8(greatest(log2(duration_ms), 5)) - 5),
         toStartOfDay(timestamp), duration_ms, count()
  GROUP BY project_id, agent_name,
           bitShiftLeft(bitShiftRight(duration_ms, toUInt8(greatest(log2(duration_ms), 5)) - 5), toUInt8(greatest(log2(duration_ms), 5)) - 5),
           toStartOfDay(timestamp), duration_ms
);

ALTER TABLE runs_local ON CLUSTER runwatch ADD COLUMN IF NOT EXISTS inserted_at DateTime DEFAULT toDateTime(0, 'UTC');

ALTER TABLE runs ON CLUSTER runwatch ADD COLUMN IF NOT EXISTS inserted_at DateTime DEFAULT toDateTime(0, 'UTC');

ALTER TABLE runs_local ON CLUSTER runwatch MATERIALIZE COLUMN inserted_at SETTINGS mutations_sync = 2;

ALTER TABLE runs_local ON CLUSTER runwatch MODIFY COLUMN inserted_at DateTime DEFAULT now();

ALTER TABLE runs ON CLUSTER runwatch MODIFY COLUMN inserted_at DateTime DEFAULT now();

ALTER TABLE runs_local ON CLUSTER runwatch ADD INDEX IF NOT EXISTS inserted_at_minmax inserted_at TYPE minmax GRANULARITY 1;

ALTER TABLE runs_local ON CLUSTER runwatch MATERIALIZE INDEX inserted_at_minmax SETTINGS mutations_sync = 2;

ALTER TABLE runs_local ON CLUSTER runwatch MATERIALIZE PROJECTION hourly_all_agents SETTINGS mutations_sync = 2;

ALTER TABLE runs_local ON CLUSTER runwatch MATERIALIZE PROJECTION run_counts SETTINGS mutations_sync = 2;

ALTER TABLE runs_local ON CLUSTER runwatch MATERIALIZE PROJECTION duration_buckets SETTINGS mutations_sync = 2;

ALTER TABLE runs_local ON CLUSTER runwatch MATERIALIZE PROJECTION agent_duration_buckets SETTINGS mutations_sync = 2;

ALTER TABLE runs_local ON CLUSTER runwatch MATERIALIZE PROJECTION duration_values SETTINGS mutations_sync = 2;

ALTER TABLE runs_local ON CLUSTER runwatch MATERIALIZE PROJECTION agent_duration_values SETTINGS mutations_sync = 2;

ALTER TABLE runs_local ON CLUSTER runwatch MATERIALIZE PROJECTION daily_duration_buckets SETTINGS mutations_sync = 2;

ALTER TABLE runs_local ON CLUSTER runwatch MATERIALIZE PROJECTION daily_agent_duration_buckets SETTINGS mutations_sync = 2;

ALTER TABLE runs_local ON CLUSTER runwatch MATERIALIZE PROJECTION daily_duration_values SETTINGS mutations_sync = 2;

ALTER TABLE runs_local ON CLUSTER runwatch MATERIALIZE PROJECTION daily_agent_duration_values SETTINGS mutations_sync = 2;
