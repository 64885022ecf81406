ALTER TABLE runs_local ON CLUSTER runwatch MODIFY SETTING replicated_deduplication_window = 10000;

ALTER TABLE live_runs_local ON CLUSTER runwatch MODIFY SETTING replicated_deduplication_window = 10000;

ALTER TABLE run_steps_local ON CLUSTER runwatch MODIFY SETTING replicated_deduplication_window = 10000;
