-- Score names (contract §10): a name keeps one data type per project, the type of the first score recorded under it.
-- Every instance checks a score against this table (through a cache of the names it has seen: a name's type never
-- changes), so two instances can never record one name with two types.
CREATE TABLE score_names (
  project_id uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  name       text NOT NULL,
  data_type  text NOT NULL CHECK (data_type IN ('numeric', 'boolean', 'categorical')),
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (project_id, name)
);

-- Alert rules may watch one user's runs (contract §10), as they may watch one agent's.
ALTER TABLE alert_rules ADD COLUMN user_id text;
