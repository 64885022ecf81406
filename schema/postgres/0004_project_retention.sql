-- How long a project's runs and steps are kept (contract §3): older ones are never read, and deleted within a day.
ALTER TABLE projects ADD COLUMN retention_days integer NOT NULL DEFAULT 400 CHECK (retention_days BETWEEN 1 AND 3650);
