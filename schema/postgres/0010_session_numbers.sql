-- A number for each session of a project, handed out once, in the order sessions are first flushed: ClickHouse keeps
-- the sessions of each hour as a bitmap of these numbers, whose union counts a window's sessions exactly
-- (schema/clickhouse/0011, src/sessions/numbers.ts). One sequence for every project: a project's numbers are not
-- consecutive, only increasing, which keeps its bitmaps small enough.
CREATE TABLE session_numbers (
  project_id uuid NOT NULL,
  session_id bytea NOT NULL, -- the id's UTF-8 bytes: any id, NUL included
  number bigint GENERATED ALWAYS AS IDENTITY,
  PRIMARY KEY (project_id, session_id)
);
