-- The score report from rollups (contract §10, src/scores/queries.ts): how many latest scores (of each run, name and
-- source) hold each value, per hour and per day of their runs' start, so that a 30-day report reads thousands of
-- rows instead of every score of the window, and its median stays exact (the values with their counts).
--
-- A rollup counts what is inserted; a score that replaces an earlier one of its pair (a re-sent id, a new verdict)
-- must also take the earlier one out. Ingest knows which it replaces (it looks the pair up under the run's lock,
-- src/ingest/service.ts) and writes it on the score's row: `replaces` 1 with the earlier value and label. The views
-- below then add the score and subtract the one it replaced; both have the same run, so the same hour, agent, name
-- and source.
ALTER TABLE scores ADD COLUMN IF NOT EXISTS replaces UInt8;
ALTER TABLE scores ADD COLUMN IF NOT EXISTS replaced_value Float64;
ALTER TABLE scores ADD COLUMN IF NOT EXISTS replaced_label String;
-- latest_scores takes every column of scores (its view selects them all).
ALTER TABLE latest_scores ADD COLUMN IF NOT EXISTS replaces UInt8;
ALTER TABLE latest_scores ADD COLUMN IF NOT EXISTS replaced_value Float64;
ALTER TABLE latest_scores ADD COLUMN IF NOT EXISTS replaced_label String;

-- Per hour of the runs' start: the count of latest scores of each value (numeric, boolean as 1/0) or label
-- (categorical), by name and agent. Rows whose count sums to 0 (a value replaced by another) go at merges.
CREATE TABLE IF NOT EXISTS score_rollups (
  project_id UUID,
  run_hour   DateTime('UTC'),
  name       LowCardinality(String),
  data_type  LowCardinality(String),
  agent_name LowCardinality(String),
  value      Float64,
  label      String,
  scores     Int64
) ENGINE = SummingMergeTree
PARTITION BY toYYYYMM(run_hour)
ORDER BY (project_id, run_hour, name, data_type, agent_name, value, label);

CREATE MATERIALIZED VIEW IF NOT EXISTS score_rollups_of_scores TO score_rollups AS SELECT
  project_id, toStartOfHour(run_timestamp) AS run_hour, name, data_type, agent_name,
  counted.1 AS value, counted.2 AS label, counted.3 AS scores
FROM scores AS score
ARRAY JOIN if(score.replaces = 1,
              [(score.value, score.label, 1), (score.replaced_value, score.replaced_label, -1)],
              [(score.value, score.label, 1)]) AS counted;

-- The same per day: a 30-day report reads whole days here and only its edges' hours above.
CREATE TABLE IF NOT EXISTS daily_score_rollups (
  project_id UUID,
  run_day    DateTime('UTC'),
  name       LowCardinality(String),
  data_type  LowCardinality(String),
  agent_name LowCardinality(String),
  value      Float64,
  label      String,
  scores     Int64
) ENGINE = SummingMergeTree
PARTITION BY toYYYYMM(run_day)
ORDER BY (project_id, run_day, name, data_type, agent_name, value, label);

CREATE MATERIALIZED VIEW IF NOT EXISTS daily_score_rollups_of_hours TO daily_score_rollups AS SELECT
  project_id, toStartOfDay(run_hour) AS run_day, name, data_type, agent_name, value, label, scores
FROM score_rollups;

-- Scores stored before this migration: their latest of each pair, counted once (the daily view takes them too).
INSERT INTO score_rollups
SELECT project_id, toStartOfHour(run_timestamp) AS run_hour, name, data_type, agent_name, value, label,
       toInt64(count()) AS scores
FROM latest_scores FINAL
GROUP BY project_id, run_hour, name, data_type, agent_name, value, label;
