-- Hourly rollups of finished runs, per (project, hour, agent): the counters and sums of the report measures
-- (src/reports/signals.ts, PARTIALS), so that a report over a long window reads one row per agent and hour
-- for its whole hours and the raw rows of `runs` only for the partial hours at its edges and for the exact
-- percentiles. Every column adds up across any split of the runs (sums, and sets of name hashes), so the
-- unmerged parts of this AggregatingMergeTree are read as they are, with no FINAL.
--
-- A materialized view fills it from every insert into `runs`: a finished run is written there once (the data
-- model of 0001), so it is counted here once. The rare duplicate of two instances racing on one finish, which
-- ReplacingMergeTree later removes from `runs`, stays counted here.
CREATE TABLE IF NOT EXISTS runs_hourly (
  project_id     UUID,
  hour           DateTime('UTC'),
  agent_name     LowCardinality(String),
  runs           SimpleAggregateFunction(sum, UInt64),
  completed_runs SimpleAggregateFunction(sum, UInt64),
  loop_runs      SimpleAggregateFunction(sum, UInt64),
  cost_usd       SimpleAggregateFunction(sum, Decimal(38, 12)),
  tokens         SimpleAggregateFunction(sum, UInt64),
  steps          SimpleAggregateFunction(sum, UInt64),
  tool_calls     SimpleAggregateFunction(sum, UInt64),
  tool_hashes    SimpleAggregateFunction(groupUniqArrayArray, Array(UInt64))
) ENGINE = AggregatingMergeTree
PARTITION BY toYYYYMM(hour)
ORDER BY (project_id, hour, agent_name);

-- The same expressions as the raw partials in src/reports/signals.ts (a test compares the two paths).
CREATE MATERIALIZED VIEW IF NOT EXISTS runs_hourly_mv TO runs_hourly AS
SELECT project_id, toStartOfHour(timestamp) AS hour, agent_name,
       count() AS runs,
       countIf(status = 'completed') AS completed_runs,
       countIf(loop_detected) AS loop_runs,
       sum(toDecimal128(least(total_cost_usd, 1e14), 12)) AS cost_usd,
       sum(total_tokens) AS tokens,
       sum(total_steps) AS steps,
       sum(tool_calls) AS tool_calls,
       groupUniqArrayArray(arrayMap(tool -> cityHash64(tool), tool_names)) AS tool_hashes
FROM runs
GROUP BY project_id, hour, agent_name;

-- Runs stored before this migration. A run inserted while it runs could be counted twice: apply it before
-- the service takes writes (every instance migrates at start-up, under one lock).
INSERT INTO runs_hourly
SELECT project_id, toStartOfHour(timestamp) AS hour, agent_name,
       count(), countIf(status = 'completed'), countIf(loop_detected),
       sum(toDecimal128(least(total_cost_usd, 1e14), 12)), sum(total_tokens), sum(total_steps), sum(tool_calls),
       groupUniqArrayArray(arrayMap(tool -> cityHash64(tool), tool_names))
FROM runs
GROUP BY project_id, hour, agent_name;
