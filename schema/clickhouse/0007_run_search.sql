-- Finding runs (contract §11): the models a run used, and the skip indexes that let the run list's new filters and
-- its text search `q` read the granules that can match instead of every run of a window (src/reports/run-search.ts,
-- docs/search.md).

-- The distinct models of a run's llm steps, derived at ingest as tool_names is (src/ingest/derive.ts), so that a model
-- filter reads one column of runs instead of looking runs up through their steps. Runs stored before this migration
-- have it empty: their steps are in run_steps, but rebuilding every run from them is a join over all steps that a
-- large deployment cannot hold in memory; a model filter does not find them (docs/search.md).
ALTER TABLE runs ADD COLUMN IF NOT EXISTS models Array(LowCardinality(String));
ALTER TABLE live_runs ADD COLUMN IF NOT EXISTS models Array(LowCardinality(String));

-- Array filters (tag, model, tool_name): a run carries few values of small sets, so a granule's bloom filter says
-- "none of these granule's runs has it" for a rare value; a common one reads about what it finds.
ALTER TABLE runs ADD INDEX IF NOT EXISTS tags_bloom tags TYPE bloom_filter(0.01) GRANULARITY 1;
ALTER TABLE runs ADD INDEX IF NOT EXISTS models_bloom models TYPE bloom_filter(0.01) GRANULARITY 1;
ALTER TABLE runs ADD INDEX IF NOT EXISTS tool_names_bloom tool_names TYPE bloom_filter(0.01) GRANULARITY 1;

-- Text search: q is a case-insensitive substring of a run's input, output or termination_detail, or of one of its
-- steps' input, output or error. Each table indexes one expression, its text fields lowered and joined by a NUL (which
-- no q holds, so a match never spans two fields), with 4-gram bloom filters: a granule that holds q holds each of its
-- 4-grams. A q of 3 characters has none and reads the window's text; 4-grams skip far more granules than 3-grams of
-- text full of ids and numbers, whose 3-grams every granule holds. The measured alternatives (3-grams, token bloom
-- filters, the text index) are in docs/search.md.
ALTER TABLE runs ADD INDEX IF NOT EXISTS text_ngrams lowerUTF8(concat(input, '\0', output, '\0', termination_detail))
  TYPE ngrambf_v1(4, 65536, 2, 0) GRANULARITY 1;
ALTER TABLE run_steps ADD INDEX IF NOT EXISTS text_ngrams lowerUTF8(concat(input, '\0', output, '\0', ifNull(error, '')))
  TYPE ngrambf_v1(4, 65536, 2, 0) GRANULARITY 1;

-- Runs and steps stored before this migration: indexed once, before the service starts.
ALTER TABLE runs MATERIALIZE INDEX tags_bloom SETTINGS mutations_sync = 1;
ALTER TABLE runs MATERIALIZE INDEX tool_names_bloom SETTINGS mutations_sync = 1;
ALTER TABLE runs MATERIALIZE INDEX text_ngrams SETTINGS mutations_sync = 1;
ALTER TABLE run_steps MATERIALIZE INDEX text_ngrams SETTINGS mutations_sync = 1;
