ALTER TABLE runs MODIFY SETTING replicated_deduplication_window = 10000;

ALTER TABLE live_runs MODIFY SETTING replicated_deduplication_window = 10000;

ALTER TABLE run_steps MODIFY SETTING replicated_deduplication_window = 10000;
