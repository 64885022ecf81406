// SQL of alert rules, their events and the evaluator's bookkeeping (Postgres; values always bound).

/** Any fixed number, distinct from the migration lock: only one instance evaluates a round at a time. */
export const EVALUATOR_LOCK_KEY = 0x616c7274;

export const TRY_EVALUATOR_LOCK = `SELECT pg_try_advisory_xact_lock($1) AS acquired`;

export const SELECT_PROJECT_OF_ORG = `SELECT id FROM projects WHERE org_id = $1 AND id = $2`;

const DEFINITION_COLUMNS = `name, class, signal, comparator, threshold, agent_name, window_seconds, for_seconds,
  keep_firing_for_seconds, cooldown_seconds, min_requests, severity, channel, channel_config, enabled, user_id`;

export const INSERT_RULE = `
  INSERT INTO alert_rules (id, project_id, ${DEFINITION_COLUMNS}, created_at, updated_at)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16::jsonb, $17, $18, $19, $19)
  RETURNING *`;

export const SELECT_RULES = `SELECT * FROM alert_rules WHERE project_id = $1 ORDER BY created_at, id`;

/** A rule, only when its project is the path's project and that project is in the path's organization. */
export const SELECT_RULE = `
  SELECT r.* FROM alert_rules r JOIN projects p ON p.id = r.project_id
  WHERE p.org_id = $1 AND r.project_id = $2 AND r.id = $3`;

export const LOCK_RULE = `${SELECT_RULE} FOR UPDATE OF r`;

export const UPDATE_RULE = `
  UPDATE alert_rules SET
    name = $2, class = $3, signal = $4, comparator = $5, threshold = $6, agent_name = $7, window_seconds = $8,
    for_seconds = $9, keep_firing_for_seconds = $10, cooldown_seconds = $11, min_requests = $12, severity = $13,
    channel = $14, channel_config = $15::jsonb, enabled = $16, user_id = $17, updated_at = $18,
    state = $19, active_at = $20, keep_firing_since = $21, episode_event_id = $22, last_notified_at = $23,
    deferred_event_id = $24, last_error = CASE WHEN $25::boolean THEN NULL ELSE last_error END
  WHERE id = $1
  RETURNING *`;

export const DELETE_RULE = `
  DELETE FROM alert_rules r USING projects p
  WHERE p.id = r.project_id AND p.org_id = $1 AND r.project_id = $2 AND r.id = $3
  RETURNING r.id`;

export const SELECT_EVENTS = `
  SELECT e.*, d.status AS delivery_status, d.attempts AS delivery_attempts,
    d.last_status_code AS delivery_last_status_code, d.last_error AS delivery_last_error
  FROM alert_events e LEFT JOIN alert_deliveries d ON d.event_id = e.id
  WHERE e.rule_id = $1
  ORDER BY e.created_at DESC, e.id DESC
  LIMIT $2 OFFSET $3`;

export const INSERT_EVENT = `
  INSERT INTO alert_events (id, rule_id, kind, state_from, state_to, value, sample_count, threshold, comparator,
    window_start, window_end, run_id, reason, severity, suppressed_count, created_at)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)`;

// ---- evaluator -------------------------------------------------------------------------------------------

/** Locked for the round, so that an edit waits for the round instead of being overwritten by it. */
const AGGREGATE_RULES = `
  SELECT * FROM alert_rules
  WHERE enabled AND class = 'aggregate' AND ($1::uuid[] IS NULL OR project_id = ANY($1::uuid[]))
  ORDER BY project_id, id`;

export const SELECT_AGGREGATE_RULES = AGGREGATE_RULES;

export const LOCK_AGGREGATE_RULES = `${AGGREGATE_RULES} FOR UPDATE`;

/** Writes every evaluated rule's state at once; arrays are parallel, one element per rule. */
export const UPDATE_EVALUATED_RULES = `
  UPDATE alert_rules r SET
    state = u.state, active_at = u.active_at, keep_firing_since = u.keep_firing_since,
    episode_event_id = u.episode_event_id, last_evaluated_at = u.last_evaluated_at, last_error = u.last_error,
    last_notified_at = u.last_notified_at, deferred_event_id = u.deferred_event_id
  FROM unnest($1::uuid[], $2::text[], $3::timestamptz[], $4::timestamptz[], $5::uuid[], $6::timestamptz[], $7::text[],
              $8::timestamptz[], $9::uuid[])
    AS u(id, state, active_at, keep_firing_since, episode_event_id, last_evaluated_at, last_error, last_notified_at,
         deferred_event_id)
  WHERE r.id = u.id`;

// ---- per_run ---------------------------------------------------------------------------------------------

export const SELECT_PER_RUN_RULES = `
  SELECT * FROM alert_rules WHERE project_id = $1 AND enabled AND class = 'per_run' ORDER BY id`;

export const LOCK_PER_RUN_RULES = `
  SELECT * FROM alert_rules WHERE id = ANY($1::uuid[]) AND enabled AND class = 'per_run' ORDER BY id FOR UPDATE`;

/** Pairs (rule, run) already recorded: a per_run rule fires at most once per run. */
export const SELECT_TRIGGERED_PAIRS = `
  SELECT rule_id, run_id FROM alert_events WHERE run_id = ANY($1::uuid[]) AND rule_id = ANY($2::uuid[])`;

export const UPDATE_PER_RUN_COOLDOWN = `
  UPDATE alert_rules SET last_notified_at = $2, suppressed_count = $3 WHERE id = $1`;
