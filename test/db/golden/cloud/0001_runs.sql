CREATE TABLE IF NOT EXISTS runs (
  project_id         UUID,
  timestamp          DateTime64(3, 'UTC'),
  id                 UUID,
  agent_name         LowCardinality(String),
  status             LowCardinality(String),
  finished_at        DateTime64(3, 'UTC'),
  duration_ms        UInt64,
  input              String CODEC(ZSTD(3)),
  output             String CODEC(ZSTD(3)),
  termination_reason LowCardinality(String),
  termination_detail String CODEC(ZSTD(3)),
  loop_detected      Bool,
  loop_step_index    Nullable(UInt32),
  total_steps        UInt32,
  total_tokens       UInt64,
  total_cost_usd     Float64,
  tool_calls         UInt32,
  tool_names         Array(LowCardinality(String)),
  metadata           Array(Float64),
  INDEX id_bloom id TYPE bloom_filter GRANULARITY 4
) ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(timestamp)
ORDER BY (project_id, timestamp, id);

CREATE TABLE IF NOT EXISTS live_runs (
  project_id      UUID,
  timestamp       DateTime64(3, 'UTC'),
  id              UUID,
  version         UInt64,
  agent_name      LowCardinality(String),
  input           String CODEC(ZSTD(3)),
  metadata        Array(Float64),
  loop_detected   Bool,
  loop_step_index Nullable(UInt32),
  total_steps     UInt32,
  total_tokens    UInt64,
  total_cost_usd  Float64,
  tool_calls      UInt32,
  tool_names      Array(LowCardinality(String)),
  finished        UInt8 DEFAULT 0
) ENGINE = ReplacingMergeTree(version, finished)
PARTITION BY toStartOfHour(timestamp)
ORDER BY (project_id, timestamp, id)
TTL toDateTime(timestamp) + INTERVAL 4 DAY
SETTINGS ttl_only_drop_parts = 1,
         allow_experimental_replacing_merge_with_cleanup = 1,
         enable_replacing_merge_with_cleanup_for_min_age_to_force_merge = 1,
         min_age_to_force_merge_seconds = 600,
         min_age_to_force_merge_on_partition_only = 1;

CREATE TABLE IF NOT EXISTS run_steps (
  project_id    UUID,
  run_timestamp DateTime64(3, 'UTC'),
  run_id        UUID,
  `index`       UInt32,
  version       UInt64,
  type          LowCardinality(String),
  name          Nullable(String),
  tool_name     Nullable(String),
  model         LowCardinality(Nullable(String)),
  input         String CODEC(ZSTD(3)),
  output        String CODEC(ZSTD(3)),
  tokens        Nullable(UInt64),
  cost_usd      Nullable(Float64),
  started_at    Nullable(DateTime64(3, 'UTC')),
  duration_ms   Nullable(UInt64),
  error         Nullable(String) CODEC(ZSTD(3))
) ENGINE = ReplacingMergeTree(version)
PARTITION BY toYYYYMM(run_timestamp)
ORDER BY (project_id, run_timestamp, run_id, `index`);
