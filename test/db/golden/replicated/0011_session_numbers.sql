ALTER TABLE runs ON CLUSTER runwatch ADD COLUMN IF NOT EXISTS session_number UInt64
  DEFAULT if(session_id = '', 0, 9223372036854775808);

ALTER TABLE live_runs ON CLUSTER runwatch ADD COLUMN IF NOT EXISTS session_number UInt64
  DEFAULT if(session_id = '', 0, 9223372036854775808);

ALTER TABLE runs ON CLUSTER runwatch ADD PROJECTION IF NOT EXISTS session_bitmaps (
  SELECT project_id, toStartOfHour(timestamp),
         groupBitmap(session_number),
         min(session_number),
         max(session_number)
  GROUP BY project_id, toStartOfHour(timestamp)
);

ALTER TABLE runs ON CLUSTER runwatch MATERIALIZE PROJECTION session_bitmaps SETTINGS mutations_sync = 2;

ALTER TABLE runs ON CLUSTER runwatch ADD PROJECTION IF NOT EXISTS sessions_by_number (
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

ALTER TABLE runs ON CLUSTER runwatch MATERIALIZE PROJECTION sessions_by_number SETTINGS mutations_sync = 2;
