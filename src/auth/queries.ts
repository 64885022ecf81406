// SQL of users, sessions and API-key verification.
export const INSERT_USER = `
  INSERT INTO users (id, email, name, password_hash) VALUES ($1, $2, $3, $4)
  ON CONFLICT (email) DO NOTHING
  RETURNING id, email, name, verified_at, created_at`;

export const SELECT_USER_BY_EMAIL = `
  SELECT id, email, name, verified_at, created_at, password_hash FROM users WHERE email = $1`;

export const SELECT_USER = `SELECT id, email, name, verified_at, created_at FROM users WHERE id = $1`;

export const INSERT_SESSION = `INSERT INTO sessions (id, user_id, expires_at) VALUES ($1, $2, $3)`;

export const SELECT_LIVE_SESSION = `
  SELECT user_id FROM sessions WHERE id = $1 AND user_id = $2 AND revoked_at IS NULL AND expires_at > $3`;

export const REVOKE_SESSION = `UPDATE sessions SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL`;

export const SELECT_ROLE = `SELECT role FROM memberships WHERE org_id = $1 AND user_id = $2`;

export const SELECT_PROJECT_ROLE = `
  SELECT p.org_id, m.role FROM projects p JOIN memberships m ON m.org_id = p.org_id AND m.user_id = $2
  WHERE p.id = $1`;

// Verifies a key and records its use in one round trip.
export const USE_API_KEY = `
  UPDATE api_keys k SET last_used_at = now()
  FROM projects p
  WHERE k.key_hash = $1 AND k.revoked_at IS NULL AND p.id = k.project_id
  RETURNING k.id, k.project_id, p.org_id`;

// Login throttling (login-throttle.ts): the counters of an address and of an address + e-mail.
export const SELECT_LOGIN_FAILURES = `
  SELECT key, failures, last_failure_at FROM login_failures WHERE key = ANY($1::text[]) AND last_failure_at >= $2`;

// Counts one failure on each key, starting again a counter forgotten ($3: older than a day); other forgotten
// counters are deleted on the way, so the table holds a day of failures at most.
export const COUNT_LOGIN_FAILURE = `
  WITH forgotten AS (DELETE FROM login_failures WHERE last_failure_at < $3 AND key <> ALL($1::text[]))
  INSERT INTO login_failures (key, failures, last_failure_at)
  SELECT key, 1, $2 FROM unnest($1::text[]) AS key
  ON CONFLICT (key) DO UPDATE SET
    failures = CASE WHEN login_failures.last_failure_at < $3 THEN 1 ELSE login_failures.failures + 1 END,
    last_failure_at = EXCLUDED.last_failure_at`;

export const DELETE_LOGIN_FAILURES = `DELETE FROM login_failures WHERE key = $1`;
