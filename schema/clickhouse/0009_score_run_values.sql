-- The score_mean signal from a rollup (contract §10, src/scores/queries.ts): per hour of the runs' start, name and
-- agent, how many runs have a numeric or boolean score of the name and the sum of their values, a run's value being
-- the mean of its latest score from each source. An alert over 30 days then reads ~36,000 rows of one name instead
-- of every latest score of the window.
--
-- A score that changes its run's value (a new source, a new verdict) must take the run's earlier value out: ingest,
-- which looks the run's latest scores up when it records one (0008), writes the run's value before the score
-- (`run_had_value`, `run_value_before`) and after it (`run_value_after`) on the score's row. A row stored without
-- them (inserted directly, or before this migration) is a run's only score: its value is the score's.
ALTER TABLE scores ADD COLUMN IF NOT EXISTS run_had_value UInt8;
ALTER TABLE scores ADD COLUMN IF NOT EXISTS run_value_before Float64;
ALTER TABLE scores ADD COLUMN IF NOT EXISTS run_value_after Float64 DEFAULT value;
ALTER TABLE latest_scores ADD COLUMN IF NOT EXISTS run_had_value UInt8;
ALTER TABLE latest_scores ADD COLUMN IF NOT EXISTS run_value_before Float64;
ALTER TABLE latest_scores ADD COLUMN IF NOT EXISTS run_value_after Float64 DEFAULT value;

CREATE TABLE IF NOT EXISTS score_run_values (
  project_id UUID,
  name       LowCardinality(String),
  run_hour   DateTime('UTC'),
  agent_name LowCardinality(String),
  runs       Int64,
  run_values Float64
) ENGINE = SummingMergeTree
PARTITION BY toYYYYMM(run_hour)
ORDER BY (project_id, name, run_hour, agent_name);

CREATE MATERIALIZED VIEW IF NOT EXISTS score_run_values_of_scores TO score_run_values AS SELECT
  project_id, name, toStartOfHour(run_timestamp) AS run_hour, agent_name, counted.1 AS runs, counted.2 AS run_values
FROM scores AS score
ARRAY JOIN if(score.run_had_value = 1,
              [(toInt64(1), score.run_value_after), (toInt64(-1), -score.run_value_before)],
              [(toInt64(1), score.run_value_after)]) AS counted
WHERE score.data_type != 'categorical';

-- Scores stored before this migration: each run's value counted once, from its latest scores. The grouping by run
-- spills to disk past 512 MiB: a large deployment has tens of millions of scored runs.
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
