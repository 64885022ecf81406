-- Session numbers, for the session list's exact count (contract §10, docs/sessions.md). Postgres gives each
-- (project, session) a number once (schema/postgres/0010), and the flush writes it with the run's rows. 0 is "no
-- session"; a run written with a session but before its rows carried numbers reads as SESSION_NOT_NUMBERED (2^63),
-- which no number reaches: a window holding such a run is counted by grouping its sessions, as before.
ALTER TABLE runs ADD COLUMN IF NOT EXISTS session_number UInt64
  DEFAULT if(session_id = '', 0, 9223372036854775808);
ALTER TABLE live_runs ADD COLUMN IF NOT EXISTS session_number UInt64
  DEFAULT if(session_id = '', 0, 9223372036854775808);

-- The sessions of each (project, hour) as a bitmap of their numbers: the sessions with a run in a window's whole
-- hours are the union of its hours' bitmaps, counted exactly in milliseconds where grouping the window's sessions by
-- id takes hundreds (2.85 M sessions in 30 days at 100 M runs: 7–10 ms against 360–440, BENCHMARKS.md). Numbers are
-- handed out in the order sessions first appear, so an hour's are close together and its bitmap is small. min and max
-- say whether the hours hold runs without a session (0) or not numbered (2^63). Like every projection of `runs`, it
-- follows retention, deleted projects and replaced rows with the parts it summarizes.
ALTER TABLE runs ADD PROJECTION IF NOT EXISTS session_bitmaps (
  SELECT project_id, toStartOfHour(timestamp),
         groupBitmap(session_number),
         min(session_number),
         max(session_number)
  GROUP BY project_id, toStartOfHour(timestamp)
);
ALTER TABLE runs MATERIALIZE PROJECTION session_bitmaps SETTINGS mutations_sync = 1;

-- A session's figures per hour, found by its number: the `sessions` projection (0006) ordered by number first, so
-- that a page's 25 sessions, or the sessions at a window's edges, are read from a few granules over any window
-- instead of from every hour of it.
ALTER TABLE runs ADD PROJECTION IF NOT EXISTS sessions_by_number (
  SELECT project_id, session_number, toStartOfHour(timestamp), session_id,
         count(),
         countIf(status = 'completed'),
         countIf(loop_detected),
         min(timestamp),
         max(timestamp),
         max(finished_at),
         sum(total_steps),
         sum(total_tokens),
         sum(toDecimal128(least(total_cost_usd, 1e14), 12)),
         groupUniqArray(agent_name),
         groupUniqArray(user_id)
  GROUP BY project_id, session_number, toStartOfHour(timestamp), session_id
);
ALTER TABLE runs MATERIALIZE PROJECTION sessions_by_number SETTINGS mutations_sync = 1;
