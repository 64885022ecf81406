// Organizations and memberships: who belongs where, with which role; an organization always keeps an admin.
import type { PostgresStore, Sql } from '../db/postgres';
import { conflict, notFound } from '../errors';
import type { Role } from '../http/route';
import { toTimestamp } from '../http/schemas';
import { uuidv7 } from '../ids';
import * as q from './queries';

interface OrganizationRow {
  id: string;
  name: string;
  created_at: Date;
}
interface MemberRow extends Omit<OrganizationRow, 'id'> {
  user_id: string;
  email: string;
  role: Role;
}

export const toOrganization = (row: OrganizationRow) => ({
  id: row.id,
  name: row.name,
  created_at: toTimestamp(row.created_at),
});
const toMember = (row: MemberRow) => ({
  user_id: row.user_id,
  email: row.email,
  name: row.name,
  role: row.role,
  created_at: toTimestamp(row.created_at),
});

export type Organization = ReturnType<typeof toOrganization>;
export type Member = ReturnType<typeof toMember>;

/** Creates an organization with its first admin; runs inside the caller's transaction. */
export async function createOrganization(tx: Sql, name: string, adminUserId: string): Promise<Organization> {
  const [row] = await tx.query<OrganizationRow>(q.INSERT_ORGANIZATION, [uuidv7(), name]);
  await tx.query(q.INSERT_MEMBERSHIP, [row.id, adminUserId, 'admin']);
  return toOrganization(row);
}

export async function listOrganizationsOfUser(sql: Sql, userId: string): Promise<Organization[]> {
  return (await sql.query<OrganizationRow>(q.SELECT_ORGANIZATIONS_OF_USER, [userId])).map(toOrganization);
}

export function organizationService(pg: PostgresStore) {
  async function getMember(sql: Sql, orgId: string, userId: string): Promise<Member> {
    const [row] = await sql.query<MemberRow>(q.SELECT_MEMBER, [orgId, userId]);
    if (!row) throw notFound('member');
    return toMember(row);
  }

  /** Refuses a change that would leave the organization without an admin. */
  async function assertAdminRemains(tx: Sql, orgId: string, userId: string): Promise<void> {
    const admins = await tx.query<{ user_id: string }>(q.LOCK_ADMINS, [orgId]);
    if (admins.length === 1 && admins[0].user_id === userId)
      throw conflict('an organization must keep at least one admin');
  }

  return {
    create: (name: string, userId: string) => pg.transaction((tx) => createOrganization(tx, name, userId)),
    listForUser: (userId: string) => listOrganizationsOfUser(pg, userId),
    async get(orgId: string) {
      const [row] = await pg.query<OrganizationRow>(q.SELECT_ORGANIZATION, [orgId]);
      if (!row) throw notFound('organization');
      return toOrganization(row);
    },
    async rename(orgId: string, name: string) {
      const [row] = await pg.query<OrganizationRow>(q.RENAME_ORGANIZATION, [orgId, name]);
      if (!row) throw notFound('organization');
      return toOrganization(row);
    },
    async listMembers(orgId: string) {
      return (await pg.query<MemberRow>(q.SELECT_MEMBERS, [orgId])).map(toMember);
    },
    async addMember(orgId: string, email: string, role: Role) {
      const [user] = await pg.query<{ id: string }>(q.SELECT_USER_BY_EMAIL, [email]);
      if (!user) throw notFound('user');
      const inserted = await pg.query(q.INSERT_MEMBERSHIP, [orgId, user.id, role]);
      if (inserted.length === 0) throw conflict('that user is already a member');
      return getMember(pg, orgId, user.id);
    },
    changeRole: (orgId: string, userId: string, role: Role) =>
      pg.transaction(async (tx) => {
        const member = await getMember(tx, orgId, userId);
        if (member.role === 'admin' && role !== 'admin') await assertAdminRemains(tx, orgId, userId);
        await tx.query(q.UPDATE_MEMBER_ROLE, [orgId, userId, role]);
        return { ...member, role };
      }),
    removeMember: (orgId: string, userId: string) =>
      pg.transaction(async (tx) => {
        const member = await getMember(tx, orgId, userId);
        if (member.role === 'admin') await assertAdminRemains(tx, orgId, userId);
        await tx.query(q.DELETE_MEMBER, [orgId, userId]);
      }),
  };
}

export type OrganizationService = ReturnType<typeof organizationService>;
