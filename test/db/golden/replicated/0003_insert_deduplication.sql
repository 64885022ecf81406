ALTER TABLE runs ON CLUSTER runwatch MODIFY SETTING replicated_deduplication_window = 10000;

ALTER TABLE live_runs ON CLUSTER runwatch MODIFY SETTING replicated_deduplication_window = 10000;

ALTER TABLE run_steps ON CLUSTER runwatch MODIFY SETTING replicated_deduplication_window = 10000;
