-- Pre-aggregates that make a report cost what its answer costs, not what its window holds (docs/reports.md, "Reports
-- at 100 million runs"). Each is an aggregate projection of `runs`: written with each part, merged with it, and
-- rebuilt on the merges and lightweight deletes that drop rows (0002, 0004), so it always counts what `runs` holds:
-- retention, project deletion and replaced OTLP rows need nothing of their own. Reports read them for the whole hours
-- of a window and raw rows only for the partial hours at its edges (src/reports/rollups.ts).

-- The hourly rollups of 0002 without the agent: one row per hour instead of one per agent and hour, for the reports of
-- all agents. Their distinct names (unique_agents, unique_tools) cost most to merge: a 30-day summary merges 720 sets
-- of names here instead of 36,000. Reports with an agent filter, and health, read `hourly`.
ALTER TABLE runs ADD PROJECTION IF NOT EXISTS hourly_all_agents (
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

-- The run list's counts: how many finished runs match any mix of its filters (agent, status, loop), per hour, so
-- that X-Total-Count and the hours a page's runs lie in are known before a run is read (src/reports/run-list.ts).
-- Reads one row per hour, agent, status and loop flag instead of one per run.
ALTER TABLE runs ADD PROJECTION IF NOT EXISTS run_counts (
  SELECT project_id, toStartOfHour(timestamp), agent_name, status, loop_detected, count()
  GROUP BY project_id, toStartOfHour(timestamp), agent_name, status, loop_detected
);

-- Exact duration percentiles in two steps (src/reports/durations.ts). Durations are grouped into buckets of 32 per
-- power of two (each 1.6% to 3.1% wide; below 64 ms a bucket is one millisecond). Step one counts the runs of each
-- bucket per hour and finds the bucket that holds a percentile's rank; step two counts the runs of each distinct
-- duration in that bucket alone and finds the rank's exact value. A 30-day percentile then reads a few hundred
-- rows per hour (step one) and a few hundred per hour of one bucket (step two) instead of every run. The bucket
-- expression must be written exactly as durations.ts writes it: ClickHouse matches a query to a projection by its
-- expressions.
ALTER TABLE runs ADD PROJECTION IF NOT EXISTS duration_buckets (
  SELECT project_id, toStartOfHour(timestamp),
         bitShiftLeft(bitShiftRight(duration_ms, toUInt8(greatest(log2(duration_ms), 5)) - 5), toUInt8(greatest(log2(duration_ms), 5)) - 5),
         count()
  GROUP BY project_id, toStartOfHour(timestamp),
           bitShiftLeft(bitShiftRight(duration_ms, toUInt8(greatest(log2(duration_ms), 5)) - 5), toUInt8(greatest(log2(duration_ms), 5)) - 5)
);

ALTER TABLE runs ADD PROJECTION IF NOT EXISTS agent_duration_buckets (
  SELECT project_id, agent_name, toStartOfHour(timestamp),
         bitShiftLeft(bitShiftRight(duration_ms, toUInt8(greatest(log2(duration_ms), 5)) - 5), toUInt8(greatest(log2(duration_ms), 5)) - 5),
         count()
  GROUP BY project_id, agent_name, toStartOfHour(timestamp),
           bitShiftLeft(bitShiftRight(duration_ms, toUInt8(greatest(log2(duration_ms), 5)) - 5), toUInt8(greatest(log2(duration_ms), 5)) - 5)
);

-- Step two's counts are keyed by the bucket first, so the runs of one bucket over any range of hours are one
-- range of the projection's primary key.
ALTER TABLE runs ADD PROJECTION IF NOT EXISTS duration_values (
  SELECT project_id,
         bitShiftLeft(bitShiftRight(duration_ms, toUInt8(greatest(log2(duration_ms), 5)) - 5), toUInt8(greatest(log2(duration_ms), 5)) - 5),
         toStartOfHour(timestamp), duration_ms, count()
  GROUP BY project_id,
           bitShiftLeft(bitShiftRight(duration_ms, toUInt8(greatest(log2(duration_ms), 5)) - 5), toUInt8(greatest(log2(duration_ms), 5)) - 5),
           toStartOfHour(timestamp), duration_ms
);

ALTER TABLE runs ADD PROJECTION IF NOT EXISTS agent_duration_values (
  SELECT project_id, agent_name,
         bitShiftLeft(bitShiftRight(duration_ms, toUInt8(greatest(log2(duration_ms), 5)) - 5), toUInt8(greatest(log2(duration_ms), 5)) - 5),
         toStartOfHour(timestamp), duration_ms, count()
  GROUP BY project_id, agent_name,
           bitShiftLeft(bitShiftRight(duration_ms, toUInt8(greatest(log2(duration_ms), 5)) - 5), toUInt8(greatest(log2(duration_ms), 5)) - 5),
           toStartOfHour(timestamp), duration_ms
);

-- The same per day, for reports whose groups hold whole days (a window, an agent, a day bucket): the whole days of a
-- 30-day window are 30 rows a bucket (step one) or a duration (step two) instead of 720, and the hourly projections
-- answer only for the whole hours of the days at the window's edges.
ALTER TABLE runs ADD PROJECTION IF NOT EXISTS daily_duration_buckets (
  SELECT project_id, toStartOfDay(timestamp),
         bitShiftLeft(bitShiftRight(duration_ms, toUInt8(greatest(log2(duration_ms), 5)) - 5), toUInt8(greatest(log2(duration_ms), 5)) - 5),
         count()
  GROUP BY project_id, toStartOfDay(timestamp),
           bitShiftLeft(bitShiftRight(duration_ms, toUInt8(greatest(log2(duration_ms), 5)) - 5), toUInt8(greatest(log2(duration_ms), 5)) - 5)
);

ALTER TABLE runs ADD PROJECTION IF NOT EXISTS daily_agent_duration_buckets (
  SELECT project_id, agent_name, toStartOfDay(timestamp),
         bitShiftLeft(bitShiftRight(duration_ms, toUInt8(greatest(log2(duration_ms), 5)) - 5), toUInt8(greatest(log2(duration_ms), 5)) - 5),
         count()
  GROUP BY project_id, agent_name, toStartOfDay(timestamp),
           bitShiftLeft(bitShiftRight(duration_ms, toUInt8(greatest(log2(duration_ms), 5)) - 5), toUInt8(greatest(log2(duration_ms), 5)) - 5)
);

ALTER TABLE runs ADD PROJECTION IF NOT EXISTS daily_duration_values (
  SELECT project_id,
         bitShiftLeft(bitShiftRight(duration_ms, toUInt8(greatest(log2(duration_ms), 5)) - 5), toUInt8(greatest(log2(duration_ms), 5)) - 5),
         toStartOfDay(timestamp), duration_ms, count()
  GROUP BY project_id,
           bitShiftLeft(bitShiftRight(duration_ms, toUInt8(greatest(log2(duration_ms), 5)) - 5), toUInt8(greatest(log2(duration_ms), 5)) - 5),
           toStartOfDay(timestamp), duration_ms
);

ALTER TABLE runs ADD PROJECTION IF NOT EXISTS daily_agent_duration_values (
  SELECT project_id, agent_name,
         bitShiftLeft(bitShiftRight(duration_ms, toUInt8(greatest(log2(duration_ms), 5)) - 5), toUInt8(greatest(log2(duration_ms), 5)) - 5),
         toStartOfDay(timestamp), duration_ms, count()
  GROUP BY project_id, agent_name,
           bitShiftLeft(bitShiftRight(duration_ms, toUInt8(greatest(log2(duration_ms), 5)) - 5), toUInt8(greatest(log2(duration_ms), 5)) - 5),
           toStartOfDay(timestamp), duration_ms
);

-- When each finished row was stored. A run caught between its finished row and its live tombstone (the flusher
-- writes the two one after the other) is looked up only among the rows stored in the last hour: the minmax index
-- skips every granule stored earlier, so the look-up reads the granules of recent runs instead of a day of them
-- (src/reports/window-runs.ts).
-- Rows stored before this migration get 1970: a default of now() would be computed for them on every read.
ALTER TABLE runs ADD COLUMN IF NOT EXISTS inserted_at DateTime DEFAULT toDateTime(0, 'UTC');
ALTER TABLE runs MATERIALIZE COLUMN inserted_at SETTINGS mutations_sync = 1;
ALTER TABLE runs MODIFY COLUMN inserted_at DateTime DEFAULT now();
ALTER TABLE runs ADD INDEX IF NOT EXISTS inserted_at_minmax inserted_at TYPE minmax GRANULARITY 1;

-- Runs stored before this migration: built once, before the service starts (the migration waits for them).
ALTER TABLE runs MATERIALIZE INDEX inserted_at_minmax SETTINGS mutations_sync = 1;
ALTER TABLE runs MATERIALIZE PROJECTION hourly_all_agents SETTINGS mutations_sync = 1;
ALTER TABLE runs MATERIALIZE PROJECTION run_counts SETTINGS mutations_sync = 1;
ALTER TABLE runs MATERIALIZE PROJECTION duration_buckets SETTINGS mutations_sync = 1;
ALTER TABLE runs MATERIALIZE PROJECTION agent_duration_buckets SETTINGS mutations_sync = 1;
ALTER TABLE runs MATERIALIZE PROJECTION duration_values SETTINGS mutations_sync = 1;
ALTER TABLE runs MATERIALIZE PROJECTION agent_duration_values SETTINGS mutations_sync = 1;
ALTER TABLE runs MATERIALIZE PROJECTION daily_duration_buckets SETTINGS mutations_sync = 1;
ALTER TABLE runs MATERIALIZE PROJECTION daily_agent_duration_buckets SETTINGS mutations_sync = 1;
ALTER TABLE runs MATERIALIZE PROJECTION daily_duration_values SETTINGS mutations_sync = 1;
ALTER TABLE runs MATERIALIZE PROJECTION daily_agent_duration_values SETTINGS mutations_sync = 1;
