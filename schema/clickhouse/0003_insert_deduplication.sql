-- The ingest log's flusher inserts each chunk of a segment with a deterministic insert_deduplication_token, so that
-- a chunk inserted again after a crash (between its insert and the deletion of its segment) is dropped by the
-- engine instead of stored twice. Non-replicated tables keep the tokens of their last N inserts only when asked.
-- 10,000 inserts a table: each instance flushes about once a second, one insert per table, so a crashed instance
-- that restarts within ~10,000 / (number of instances) seconds still finds its tokens (the window is shared).
ALTER TABLE runs MODIFY SETTING non_replicated_deduplication_window = 10000;
ALTER TABLE live_runs MODIFY SETTING non_replicated_deduplication_window = 10000;
ALTER TABLE run_steps MODIFY SETTING non_replicated_deduplication_window = 10000;
