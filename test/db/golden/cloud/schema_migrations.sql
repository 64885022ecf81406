CREATE TABLE IF NOT EXISTS schema_migrations (version String, applied_at DateTime64(3) DEFAULT now64(3))
  ENGINE = MergeTree ORDER BY version;
