-- Sessions, users and scores (contract §10).

-- A run's session, user and tags. '' stands for "none" (the API's null): both ids are 1–200 characters when set, and
-- an empty String costs nothing where a Nullable column would add a null map to every read.
ALTER TABLE runs ADD COLUMN IF NOT EXISTS session_id String DEFAULT '';
ALTER TABLE runs ADD COLUMN IF NOT EXISTS user_id String DEFAULT '';
ALTER TABLE runs ADD COLUMN IF NOT EXISTS tags Array(LowCardinality(String));
ALTER TABLE live_runs ADD COLUMN IF NOT EXISTS session_id String DEFAULT '';
ALTER TABLE live_runs ADD COLUMN IF NOT EXISTS user_id String DEFAULT '';
ALTER TABLE live_runs ADD COLUMN IF NOT EXISTS tags Array(LowCardinality(String));

-- A session's or a user's runs are found through these indexes, not by reading a window's every row: a session's runs
-- start close together, so few granules hold any of them; a user's runs are spread thinner, and the index still
-- skips the granules without them. A session list's page looks 25 sessions up at once: at a false positive rate of
-- 1% that read ~140 of 600 granules of a month (10 M runs over 60 days), at 0.1% 19.
ALTER TABLE runs ADD INDEX IF NOT EXISTS session_bloom session_id TYPE bloom_filter(0.001) GRANULARITY 1;
ALTER TABLE runs ADD INDEX IF NOT EXISTS user_bloom user_id TYPE bloom_filter(0.01) GRANULARITY 1;
ALTER TABLE runs MATERIALIZE INDEX session_bloom SETTINGS mutations_sync = 1;
ALTER TABLE runs MATERIALIZE INDEX user_bloom SETTINGS mutations_sync = 1;

-- Sessions per hour: for each (project, hour, session) the figures of a session list entry (contract §10) over its
-- finished runs of that hour, so that a session list over a long window reads one row per session and hour instead
-- of one per run (src/sessions/queries.ts; partial hours at a window's edges and the running runs are read raw). An
-- aggregate projection of `runs`, like `hourly` (0002): written, merged, rebuilt on deduplicating merges and on
-- lightweight deletes (late OTLP spans, retention, a deleted project) with the parts it summarizes, so it always
-- counts what `runs` holds. Runs outside sessions fall into one row per hour ('' session), which readers skip.
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
ALTER TABLE runs MATERIALIZE PROJECTION sessions SETTINGS mutations_sync = 1;

-- Scores: judgements of runs (a user's thumbs down, an evaluator's 0.4, a reviewer's label). A score is keyed by its
-- run and its id: re-sending an id writes a new version, and the highest version is the score (FINAL). Partitioned
-- and ordered by the run's start, as runs are, so that a window's scores are a range of the key, and retention
-- deletes them with their runs. A score carries its run's agent (which never changes), so that a report or an alert
-- of one agent reads no run.
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
  -- numeric: the number; boolean: 1 or 0; categorical: 0 (its value is `label`).
  value         Float64,
  label         String,
  comment       String CODEC(ZSTD(3)),
  created_at    DateTime64(3, 'UTC')
) ENGINE = ReplacingMergeTree(version)
PARTITION BY toYYYYMM(run_timestamp)
ORDER BY (project_id, run_timestamp, run_id, id)
SETTINGS non_replicated_deduplication_window = 10000;

-- The latest score of each (run, name, source), which the score report and the score_mean signal count (contract
-- §10): every score written to `scores` is copied here, keyed by its pair, and FINAL keeps the highest version of each
-- pair. Reading it is a merge of sorted parts; finding the latest of each pair in `scores` itself is a GROUP BY over
-- (run, name, source), ten times the work (3 M scores, 2 cores: ~150 ms against ~2 s). A score re-sent under its id
-- with another name or source replaces it in `scores`, but here it adds to the new pair and stays the latest of the
-- old one: a score's id names its judgement, and clients re-send ids to retry, not to rename.
CREATE TABLE IF NOT EXISTS latest_scores AS scores
ENGINE = ReplacingMergeTree(version)
PARTITION BY toYYYYMM(run_timestamp)
ORDER BY (project_id, run_timestamp, run_id, name, source)
SETTINGS non_replicated_deduplication_window = 10000;

CREATE MATERIALIZED VIEW IF NOT EXISTS latest_scores_of_scores TO latest_scores AS SELECT * FROM scores;
