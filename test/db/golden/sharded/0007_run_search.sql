ALTER TABLE runs_local ON CLUSTER runwatch ADD COLUMN IF NOT EXISTS models Array(LowCardinality(String));

ALTER TABLE runs ON CLUSTER runwatch ADD COLUMN IF NOT EXISTS models Array(LowCardinality(String));

ALTER TABLE live_runs_local ON CLUSTER runwatch ADD COLUMN IF NOT EXISTS models Array(LowCardinality(String));

ALTER TABLE live_runs ON CLUSTER runwatch ADD COLUMN IF NOT EXISTS models Array(LowCardinality(String));

ALTER TABLE runs_local ON CLUSTER runwatch ADD INDEX IF NOT EXISTS tags_bloom tags TYPE bloom_filter(0.01) GRANULARITY 1;

ALTER TABLE runs_local ON CLUSTER runwatch ADD INDEX IF NOT EXISTS models_bloom models TYPE bloom_filter(0.01) GRANULARITY 1;

ALTER TABLE runs_local ON CLUSTER runwatch ADD INDEX IF NOT EXISTS tool_names_bloom tool_names TYPE bloom_filter(0.01) GRANULARITY 1;

ALTER TABLE runs_local ON CLUSTER runwatch ADD INDEX IF NOT EXISTS text_ngrams lowerUTF8(concat(input, '\0', output, '\0', termination_detail))
  TYPE ngrambf_v1(4, 65536, 2, 0) GRANULARITY 1;

ALTER TABLE run_steps_local ON CLUSTER runwatch ADD INDEX IF NOT EXISTS text_ngrams lowerUTF8(concat(input, '\0', output, '\0', ifNull(error, '')))
  TYPE ngrambf_v1(4, 65536, 2, 0) GRANULARITY 1;

ALTER TABLE runs_local ON CLUSTER runwatch MATERIALIZE INDEX tags_bloom SETTINGS mutations_sync = 2;

ALTER TABLE runs_local ON CLUSTER runwatch MATERIALIZE INDEX tool_names_bloom SETTINGS mutations_sync = 2;

ALTER TABLE runs_local ON CLUSTER runwatch MATERIALIZE INDEX text_ngrams SETTINGS mutations_sync = 2;

ALTER TABLE run_steps_local ON CLUSTER runwatch MATERIALIZE INDEX text_ngrams SETTINGS mutations_sync = 2;
