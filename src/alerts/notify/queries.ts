// The notifier's SQL over alert_deliveries (the queue), alert_events and alert_rules.

/** How long a claimed delivery stays out of other workers' reach: longer than a batch of attempts can take. */
export const CLAIM_LEASE_MS = 5 * 60 * 1000;

/**
 * Claims due deliveries by moving their next_attempt_at to the end of a lease, in one short statement: nothing is
 * held open while sending (PGlite has one connection), other instances skip rows being claimed (SKIP LOCKED), and a
 * process that dies mid-send leaves its rows to be retried when the lease ends. $4 optionally limits it to one
 * project (tests, which share one database and run in parallel, deliver only their own project's notifications).
 */
export const CLAIM_DUE_DELIVERIES = `
  UPDATE alert_deliveries d
  SET next_attempt_at = $2, updated_at = $1
  FROM (
    SELECT event_id FROM alert_deliveries
    WHERE status = 'queued' AND next_attempt_at <= $1
      AND ($4::uuid IS NULL OR rule_id IN (SELECT id FROM alert_rules WHERE project_id = $4::uuid))
    ORDER BY next_attempt_at, event_id
    LIMIT $3
    FOR UPDATE SKIP LOCKED
  ) due
  WHERE d.event_id = due.event_id AND d.status = 'queued'
  RETURNING d.event_id, d.rule_id, d.channel, d.attempts, d.last_status_code, d.last_error, d.created_at`;

export const SELECT_EVENTS = `
  SELECT id, rule_id, kind, state_from, state_to, value, sample_count, threshold, comparator, window_start, window_end,
         run_id, reason, severity, suppressed_count, created_at
  FROM alert_events WHERE id = ANY($1::uuid[])`;

export const SELECT_RULES = `SELECT * FROM alert_rules WHERE id = ANY($1::uuid[])`;

/** A successful attempt; unconditional, since what was sent was sent. */
export const MARK_SENT = `
  UPDATE alert_deliveries
  SET status = 'sent', attempts = attempts + 1, last_status_code = $2, last_error = NULL, updated_at = $3
  WHERE event_id = $1`;

/** A failed attempt: retried at $5 ('queued') or given up ('failed'). */
export const RECORD_FAILED_ATTEMPT = `
  UPDATE alert_deliveries
  SET status = $2, attempts = attempts + 1, last_status_code = $3, last_error = $4, next_attempt_at = $5,
    updated_at = $6
  WHERE event_id = $1 AND status = 'queued'`;

/** Not attempted now (paced): due again at $2, nothing else changes. */
export const POSTPONE = `
  UPDATE alert_deliveries SET next_attempt_at = $2, updated_at = $3
  WHERE event_id = $1 AND status = 'queued'`;
