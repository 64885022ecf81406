ALTER TABLE runs ADD INDEX IF NOT EXISTS tags_text tags TYPE text(tokenizer = array);

ALTER TABLE runs ADD INDEX IF NOT EXISTS models_text models TYPE text(tokenizer = array);

ALTER TABLE runs ADD INDEX IF NOT EXISTS tool_names_text tool_names TYPE text(tokenizer = array);

ALTER TABLE runs MATERIALIZE INDEX tags_text SETTINGS mutations_sync = 2;

ALTER TABLE runs MATERIALIZE INDEX models_text SETTINGS mutations_sync = 2;

ALTER TABLE runs MATERIALIZE INDEX tool_names_text SETTINGS mutations_sync = 2;
