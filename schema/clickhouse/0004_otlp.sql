-- OpenTelemetry ingest (contract §8) and step token counts (§4).

-- Steps carry their input and output token counts (`tokens` is their sum when a client sends only those).
ALTER TABLE run_steps ADD COLUMN IF NOT EXISTS input_tokens Nullable(UInt64) AFTER tokens;
ALTER TABLE run_steps ADD COLUMN IF NOT EXISTS output_tokens Nullable(UInt64) AFTER input_tokens;

-- A run assembled from spans gets a new row when a child span arrives after the run was stored: the new row has
-- a higher version, and the flusher deletes the older rows of the run once the new one is in (src/ingest/flusher.ts),
-- so that reports, which read `runs` without FINAL, count the run once. Rows of the REST API keep version 0.
ALTER TABLE runs ADD COLUMN IF NOT EXISTS version UInt64 DEFAULT 0;
-- A lightweight DELETE on a table with projections rebuilds the projection of the parts it touches.
ALTER TABLE runs MODIFY SETTING lightweight_mutation_projection_mode = 'rebuild';

-- The spans of traces being assembled, a row for each trace in each export: every span's place in the tree (plain
-- spans between GenAI spans and their agent span included) and the data of spans still waiting for their agent;
-- `open_spans` is how many spans the row leaves waiting less how many waiting ones it places, so a trace is open
-- while its rows sum to more than 0. An instance that restarts reloads the open traces (src/otlp/service.ts); the
-- rest is dropped a day later. The first column is the partition time, as the ingest log's flusher expects.
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
SETTINGS ttl_only_drop_parts = 1, non_replicated_deduplication_window = 10000;
