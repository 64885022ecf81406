ALTER TABLE scores_local ON CLUSTER runwatch ADD COLUMN IF NOT EXISTS replaces UInt8;

ALTER TABLE scores ON CLUSTER runwatch ADD COLUMN IF NOT EXISTS replaces UInt8;

ALTER TABLE scores_local ON CLUSTER runwatch ADD COLUMN IF NOT EXISTS replaced_value Float64;

ALTER TABLE scores ON CLUSTER runwatch ADD COLUMN IF NOT EXISTS replaced_value Float64;

ALTER TABLE scores_local ON CLUSTER runwatch ADD COLUMN IF NOT EXISTS replaced_label String;

ALTER TABLE scores ON CLUSTER runwatch ADD COLUMN IF NOT EXISTS replaced_label String;

ALTER TABLE latest_scores_local ON CLUSTER runwatch ADD COLUMN IF NOT EXISTS replaces UInt8;

ALTER TABLE latest_scores ON CLUSTER runwatch ADD COLUMN IF NOT EXISTS replaces UInt8;

ALTER TABLE latest_scores_local ON CLUSTER runwatch ADD COLUMN IF NOT EXISTS replaced_value Float64;

ALTER TABLE latest_scores ON CLUSTER runwatch ADD COLUMN IF NOT EXISTS replaced_value Float64;

ALTER TABLE latest_scores_local ON CLUSTER runwatch ADD COLUMN IF NOT EXISTS replaced_label String;

ALTER TABLE latest_scores ON CLUSTER runwatch ADD COLUMN IF NOT EXISTS replaced_label String;

CREATE TABLE IF NOT EXISTS score_rollups_local ON CLUSTER runwatch (
  project_id UUID,
  run_hour   DateTime('UTC'),
  name       LowCardinality(String),
  data_type  LowCardinality(String),
  agent_name LowCardinality(String),
  value      Float64,
  label      String,
  scores     Int64
) ENGINE = ReplicatedSummingMergeTree('/clickhouse/tables/{shard}/{database}/{table}', '{replica}')
PARTITION BY toYYYYMM(run_hour)
ORDER BY (project_id, run_hour, name, data_type, agent_name, value, label);

CREATE TABLE IF NOT EXISTS score_rollups ON CLUSTER runwatch AS score_rollups_local
ENGINE = Distributed(runwatch, currentDatabase(), score_rollups_local, cityHash64(project_id));

CREATE MATERIALIZED VIEW IF NOT EXISTS score_rollups_of_scores ON CLUSTER runwatch TO score_rollups_local AS SELECT
  project_id, toStartOfHour(run_timestamp) AS run_hour, name, data_type, agent_name,
  counted.1 AS value, counted.2 AS label, counted.3 AS scores
FROM scores_local AS score
ARRAY JOIN if(score.replaces = 1,
              [(score.value, score.label, 1), (score.replaced_value, score.replaced_label, -1)],
              [(score.value, score.label, 1)]) AS counted;

CREATE TABLE IF NOT EXISTS daily_score_rollups_local ON CLUSTER runwatch (
  project_id UUID,
  run_day    DateTime('UTC'),
  name       LowCardinality(String),
  data_type  LowCardinality(String),
  agent_name LowCardinality(String),
  value      Float64,
  label      String,
  scores     Int64
) ENGINE = ReplicatedSummingMergeTree('/clickhouse/tables/{shard}/{database}/{table}', '{replica}')
PARTITION BY toYYYYMM(run_day)
ORDER BY (project_id, run_day, name, data_type, agent_name, value, label);

CREATE TABLE IF NOT EXISTS daily_score_rollups ON CLUSTER runwatch AS daily_score_rollups_local
ENGINE = Distributed(runwatch, currentDatabase(), daily_score_rollups_local, cityHash64(project_id));

CREATE MATERIALIZED VIEW IF NOT EXISTS daily_score_rollups_of_hours ON CLUSTER runwatch TO daily_score_rollups_local AS SELECT
  project_id, toStartOfDay(run_hour) AS run_day, name, data_type, agent_name, value, label, scores
FROM score_rollups_local;

INSERT INTO score_rollups
SELECT project_id, toStartOfHour(run_timestamp) AS run_hour, name, data_type, agent_name, value, label,
       toInt64(count()) AS scores
FROM latest_scores FINAL
GROUP BY project_id, run_hour, name, data_type, agent_name, value, label;
