ALTER TABLE scores ADD COLUMN IF NOT EXISTS replaces UInt8;

ALTER TABLE scores ADD COLUMN IF NOT EXISTS replaced_value Float64;

ALTER TABLE scores ADD COLUMN IF NOT EXISTS replaced_label String;

ALTER TABLE latest_scores ADD COLUMN IF NOT EXISTS replaces UInt8;

ALTER TABLE latest_scores ADD COLUMN IF NOT EXISTS replaced_value Float64;

ALTER TABLE latest_scores ADD COLUMN IF NOT EXISTS replaced_label String;

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

INSERT INTO score_rollups
SELECT project_id, toStartOfHour(run_timestamp) AS run_hour, name, data_type, agent_name, value, label,
       toInt64(count()) AS scores
FROM latest_scores FINAL
GROUP BY project_id, run_hour, name, data_type, agent_name, value, label;
