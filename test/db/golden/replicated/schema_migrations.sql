CREATE TABLE IF NOT EXISTS schema_migrations ON CLUSTER runwatch (version String, applied_at DateTime64(3) DEFAULT now64(3))
  ENGINE = ReplicatedMergeTree('/clickhouse/tables/all/{database}/schema_migrations', '{replica}') ORDER BY version;
