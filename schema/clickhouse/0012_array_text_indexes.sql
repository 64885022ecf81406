-- The run list's array filters (tag, model, tool_name; contract §11) answered from text indexes: the `array`
-- tokenizer makes each element a token, and the index maps each token to the rows that hold it. A count of the runs
-- whose tags hold "vip" and whose tools hold "search_v2" then reads the two tokens' row lists and the window's keys,
-- not the arrays: for a value in one run in twelve, where every granule holds it and the bloom filters of 0007 skip
-- none, the 30 days' count at 10 M runs reads ~4× less (docs/search.md). The bloom filters stay: a server before
-- ClickHouse 26.2, which has no text index but behind a setting (docker-compose.yml pins 25.8), skips these
-- statements with a warning (src/db/migrate.ts) and keeps those.
ALTER TABLE runs ADD INDEX IF NOT EXISTS tags_text tags TYPE text(tokenizer = array);
ALTER TABLE runs ADD INDEX IF NOT EXISTS models_text models TYPE text(tokenizer = array);
ALTER TABLE runs ADD INDEX IF NOT EXISTS tool_names_text tool_names TYPE text(tokenizer = array);

-- Runs stored before this migration: indexed once, before the service starts.
ALTER TABLE runs MATERIALIZE INDEX tags_text SETTINGS mutations_sync = 1;
ALTER TABLE runs MATERIALIZE INDEX models_text SETTINGS mutations_sync = 1;
ALTER TABLE runs MATERIALIZE INDEX tool_names_text SETTINGS mutations_sync = 1;
