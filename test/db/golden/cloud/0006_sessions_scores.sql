ALTER TABLE runs ADD COLUMN IF NOT EXISTS session_id String DEFAULT '';

ALTER TABLE runs ADD COLUMN IF NOT EXISTS user_id String DEFAULT '';

ALTER TABLE runs ADD COLUMN IF NOT EXISTS tags Array(LowCardinality(String));

ALTER TABLE live_runs ADD COLUMN IF NOT EXISTS session_id String DEFAULT '';

ALTER TABLE live_runs ADD COLUMN IF NOT EXISTS user_id String DEFAULT '';

ALTER TABLE live_runs ADD COLUMN IF NOT EXISTS tags Array(LowCardinality(String));

ALTER TABLE runs ADD INDEX IF NOT EXISTS session_bloom session_id TYPE bloom_filter(0.001) GRANULARITY 1;

ALTER TABLE runs ADD INDEX IF NOT EXISTS user_bloom user_id TYPE bloom_filter(0.01) GRANULARITY 1;

ALTER TABLE runs MATERIALIZE INDEX session_bloom SETTINGS mutations_sync = 2;

ALTER TABLE runs MATERIALIZE INDEX user_bloom SETTINGS mutations_sync = 2;

ALTER TABLE runs ADD PROJECTION IF NOT EXISTS sessions (
  SELECT project_id, toStartOfHour(timestamp), session_id,
         count(),
         countIf(status = 'completed'),
         countIf(loop_detected),
         min(timestamp),
         max(timestamp),
         max(finished_at),
         sum(total_steps),
         sum(total_tokens),
         sum(toDecimal128(least(total_cost_usd, 1e14), 12)),
         groupUniqArray(agent_name),
         groupUniqArray(user_id)
  GROUP BY project_id, toStartOfHour(timestamp), session_id
);

ALTER TABLE runs MATERIALIZE PROJECTION sessions SETTINGS mutations_sync = 2;

CREATE TABLE IF NOT EXISTS scores (
  run_timestamp DateTime64(3, 'UTC'),
  project_id    UUID,
  run_id        UUID,
  id            UUID,
  version       UInt64,
  agent_name    LowCardinality(String),
  name          LowCardinality(String),
  source        LowCardinality(String),
  data_type     LowCardinality(String),

  value         Float64,
  label         String,
  comment       String CODEC(ZSTD(3)),
  created_at    DateTime64(3, 'UTC')
) ENGINE = ReplacingMergeTree(version)
PARTITION BY toYYYYMM(run_timestamp)
ORDER BY (project_id, run_timestamp, run_id, id)
SETTINGS replicated_deduplication_window = 10000;

CREATE TABLE IF NOT EXISTS latest_scores AS scores
ENGINE = ReplacingMergeTree(version)
PARTITION BY toYYYYMM(run_timestamp)
ORDER BY (project_id, run_timestamp, run_id, name, source)
SETTINGS replicated_deduplication_window = 10000;

CREATE MATERIALIZED VIEW IF NOT EXISTS latest_scores_of_scores TO latest_scores AS SELECT * FROM scores;
