-- The ingest log's flusher inserts each chunk of a segment with a deterministic insert_deduplication_token, so that
-- a chunk inserted again after a crash (between its insert and the deletion of its segment) is dropped by the
-- engine instead of stored twice. Non-replicated tables keep the tokens of their last N inserts only when asked.
ALTER TABLE runs MODIFY SETTING non_replicated_deduplication_window = 1000;
ALTER TABLE live_runs MODIFY SETTING non_replicated_deduplication_window = 1000;
ALTER TABLE run_steps MODIFY SETTING non_replicated_deduplication_window = 1000;
