// SQL of organizations and their members.
export const INSERT_ORGANIZATION = `
  INSERT INTO organizations (id, name) VALUES ($1, $2) RETURNING id, name, created_at`;

export const INSERT_MEMBERSHIP = `
  INSERT INTO memberships (org_id, user_id, role) VALUES ($1, $2, $3)
  ON CONFLICT (org_id, user_id) DO NOTHING
  RETURNING created_at`;

export const SELECT_ORGANIZATIONS_OF_USER = `
  SELECT o.id, o.name, o.created_at
  FROM organizations o JOIN memberships m ON m.org_id = o.id
  WHERE m.user_id = $1
  ORDER BY o.created_at, o.id`;

export const SELECT_ORGANIZATION = `SELECT id, name, created_at FROM organizations WHERE id = $1`;

export const RENAME_ORGANIZATION = `UPDATE organizations SET name = $2 WHERE id = $1 RETURNING id, name, created_at`;

const MEMBER_COLUMNS = `m.user_id, u.email, u.name, m.role, m.created_at`;

export const SELECT_MEMBERS = `
  SELECT ${MEMBER_COLUMNS} FROM memberships m JOIN users u ON u.id = m.user_id
  WHERE m.org_id = $1 ORDER BY m.created_at, m.user_id`;

export const SELECT_MEMBER = `
  SELECT ${MEMBER_COLUMNS} FROM memberships m JOIN users u ON u.id = m.user_id
  WHERE m.org_id = $1 AND m.user_id = $2`;

export const SELECT_USER_BY_EMAIL = `SELECT id, email, name FROM users WHERE email = $1`;

// Locks the organization's memberships so that two admins cannot demote each other at once.
export const LOCK_ADMINS = `SELECT user_id FROM memberships WHERE org_id = $1 AND role = 'admin' FOR UPDATE`;

export const UPDATE_MEMBER_ROLE = `UPDATE memberships SET role = $3 WHERE org_id = $1 AND user_id = $2`;

export const DELETE_MEMBER = `DELETE FROM memberships WHERE org_id = $1 AND user_id = $2`;
