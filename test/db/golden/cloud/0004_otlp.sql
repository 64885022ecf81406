ALTER TABLE run_steps ADD COLUMN IF NOT EXISTS input_tokens Nullable(UInt64) AFTER tokens;

ALTER TABLE run_steps ADD COLUMN IF NOT EXISTS output_tokens Nullable(UInt64) AFTER input_tokens;

ALTER TABLE runs ADD COLUMN IF NOT EXISTS version UInt64 DEFAULT 0;

ALTER TABLE runs MODIFY SETTING lightweight_mutation_projection_mode = 'rebuild';

CREATE TABLE IF NOT EXISTS otlp_traces (
  received_at DateTime64(3, 'UTC'),
  project_id  UUID,
  trace_id    String,
  open_spans  Int32,
  spans       String CODEC(ZSTD(3))
) ENGINE = MergeTree
PARTITION BY toDate(received_at)
ORDER BY (project_id, trace_id, received_at)
TTL toDateTime(received_at) + INTERVAL 1 DAY
SETTINGS ttl_only_drop_parts = 1, replicated_deduplication_window = 10000;
