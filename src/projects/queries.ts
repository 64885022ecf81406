// SQL of projects and their API keys.
const PROJECT_COLUMNS = 'id, org_id, name, retention_days, created_at';

export const INSERT_PROJECT = `
  INSERT INTO projects (id, org_id, name, retention_days) VALUES ($1, $2, $3, $4)
  ON CONFLICT (org_id, name) DO NOTHING
  RETURNING ${PROJECT_COLUMNS}`;

export const SELECT_PROJECTS = `SELECT ${PROJECT_COLUMNS} FROM projects WHERE org_id = $1 ORDER BY created_at, id`;

export const SELECT_PROJECT = `SELECT ${PROJECT_COLUMNS} FROM projects WHERE org_id = $1 AND id = $2`;

// A field left null keeps its value.
export const UPDATE_PROJECT = `
  UPDATE projects SET name = coalesce($3, name), retention_days = coalesce($4, retention_days)
  WHERE org_id = $1 AND id = $2 RETURNING ${PROJECT_COLUMNS}`;

// Its session numbers (schema/postgres/0010) go with it, in the same statement. They have no foreign key: a flush of
// runs acknowledged before the deletion may still number their sessions, and must not fail for it.
export const DELETE_PROJECT = `
  WITH deleted AS (DELETE FROM projects WHERE org_id = $1 AND id = $2 RETURNING id),
  numbers AS (DELETE FROM session_numbers WHERE project_id IN (SELECT id FROM deleted))
  SELECT id FROM deleted`;

// The keys a project deletion takes with it (by cascade), so that they can be dropped from the key cache too.
export const SELECT_PROJECT_KEY_HASHES = `
  SELECT k.key_hash FROM api_keys k JOIN projects p ON p.id = k.project_id
  WHERE p.org_id = $1 AND p.id = $2 AND k.revoked_at IS NULL`;

const KEY_COLUMNS = 'id, name, prefix, created_at, last_used_at';

export const INSERT_API_KEY = `
  INSERT INTO api_keys (id, project_id, name, key_hash, prefix) VALUES ($1, $2, $3, $4, $5)
  RETURNING ${KEY_COLUMNS}`;

export const SELECT_API_KEYS = `
  SELECT ${KEY_COLUMNS} FROM api_keys WHERE project_id = $1 AND revoked_at IS NULL ORDER BY created_at, id`;

export const REVOKE_API_KEY = `
  UPDATE api_keys SET revoked_at = now() WHERE project_id = $1 AND id = $2 AND revoked_at IS NULL RETURNING key_hash`;
