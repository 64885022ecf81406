-- Hourly rollups of finished runs, per (project, hour, agent): the counts, sums and name sets of the report
-- measures (src/reports/signals.ts, PARTIALS), so that a report over a long window reads one row per agent and
-- hour for its whole hours, and raw rows only for the partial hours at its edges and the exact percentiles.
--
-- An aggregate projection of `runs` rather than a materialized view into a table of its own: it is written with
-- each part of `runs`, atomically, it is merged with the part, and on the merges that drop a duplicate finished
-- row ('rebuild') it is rebuilt from the remaining rows, so it always counts what `runs` holds. It has a price
-- on ingest: an insert into `runs` costs 50-70% more on the embedded engine (a view: 75-90%). ClickHouse answers a query from it when the query's aggregates are
-- these expressions (rollups.ts writes them through the same column aliases; a test checks it is used).
ALTER TABLE runs MODIFY SETTING deduplicate_merge_projection_mode = 'rebuild';

ALTER TABLE runs ADD PROJECTION IF NOT EXISTS hourly (
  SELECT project_id, toStartOfHour(timestamp), agent_name,
         count(),
         countIf(status = 'completed'),
         countIf(loop_detected),
         sum(toDecimal128(least(total_cost_usd, 1e14), 12)),
         sum(total_tokens),
         sum(total_steps),
         sum(tool_calls),
         groupUniqArray(agent_name),
         groupUniqArrayArray(tool_names)
  GROUP BY project_id, toStartOfHour(timestamp), agent_name
);

-- Runs stored before this migration: built once, before the service starts (the migration waits for it).
ALTER TABLE runs MATERIALIZE PROJECTION hourly SETTINGS mutations_sync = 1;
