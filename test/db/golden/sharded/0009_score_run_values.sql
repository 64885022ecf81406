ALTER TABLE scores_local ON CLUSTER runwatch ADD COLUMN IF NOT EXISTS run_had_value UInt8;

ALTER TABLE scores ON CLUSTER runwatch ADD COLUMN IF NOT EXISTS run_had_value UInt8;

ALTER TABLE scores_local ON CLUSTER runwatch ADD COLUMN IF NOT EXISTS run_value_before Float64;

ALTER TABLE scores ON CLUSTER runwatch ADD COLUMN IF NOT EXISTS run_value_before Float64;

ALTER TABLE scores_local ON CLUSTER runwatch ADD COLUMN IF NOT EXISTS run_value_after Float64 DEFAULT value;

ALTER TABLE scores ON CLUSTER runwatch ADD COLUMN IF NOT EXISTS run_value_after Float64 DEFAULT value;

ALTER TABLE latest_scores_local ON CLUSTER runwatch ADD COLUMN IF NOT EXISTS run_had_value UInt8;

ALTER TABLE latest_scores ON CLUSTER runwatch ADD COLUMN IF NOT EXISTS run_had_value UInt8;

ALTER TABLE latest_scores_local ON CLUSTER runwatch ADD COLUMN IF NOT EXISTS run_value_before Float64;

ALTER TABLE latest_scores ON CLUSTER runwatch ADD COLUMN IF NOT EXISTS run_value_before Float64;

ALTER TABLE latest_scores_local ON CLUSTER runwatch ADD COLUMN IF NOT EXISTS run_value_after Float64 DEFAULT value;

ALTER TABLE latest_scores ON CLUSTER runwatch ADD COLUMN IF NOT EXISTS run_value_after Float64 DEFAULT value;

CREATE TABLE IF NOT EXISTS score_run_values_local ON CLUSTER runwatch (
  project_id UUID,
  name       LowCardinality(String),
  run_hour   DateTime('UTC'),
  agent_name LowCardinality(String),
  runs       Int64,
  run_values Float64
) ENGINE = ReplicatedSummingMergeTree('/clickhouse/tables/{shard}/{database}/{table}', '{replica}')
PARTITION BY toYYYYMM(run_hour)
ORDER BY (project_id, name, run_hour, agent_name);

CREATE TABLE IF NOT EXISTS score_run_values ON CLUSTER runwatch AS score_run_values_local
ENGINE = Distributed(runwatch, currentDatabase(), score_run_values_local, cityHash64(project_id));

CREATE MATERIALIZED VIEW IF NOT EXISTS score_run_values_of_scores ON CLUSTER runwatch TO score_run_values_local AS SELECT
  project_id, name, toStartOfHour(run_timestamp) AS run_hour, agent_name, counted.1 AS runs, counted.2 AS run_values
FROM scores_local AS score
ARRAY JOIN if(score.run_had_value = 1,
              [(toInt64(1), score.run_value_after), (toInt64(-1), -score.run_value_before)],
              [(toInt64(1), score.run_value_after)]) AS counted
WHERE score.data_type != 'categorical';

INSERT INTO score_run_values
SELECT project_id, name, run_hour, agent_name, toInt64(count()) AS runs, sum(run_value) AS run_values
FROM (
  SELECT project_id, name, toStartOfHour(run_timestamp) AS run_hour, agent_name, avg(value) AS run_value
  FROM latest_scores FINAL
  WHERE data_type != 'categorical'
  GROUP BY project_id, name, run_timestamp, run_id, agent_name
)
GROUP BY project_id, name, run_hour, agent_name
SETTINGS max_bytes_before_external_group_by = 536870912;
