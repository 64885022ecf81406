-- per_run rules: how many notifications the cooldown held back before the one this event sends.
ALTER TABLE alert_events ADD COLUMN suppressed_count integer NOT NULL DEFAULT 0;

-- A per_run rule fires at most once per run; this finds the (rule, run) pairs already recorded.
CREATE INDEX alert_events_run_idx ON alert_events (run_id) WHERE run_id IS NOT NULL;
