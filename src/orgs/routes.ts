// HTTP declarations of organizations and members (contract section 3).
import { z } from 'zod';
import { defineRoute } from '../http/route';
import { displayName, email, pathParams, role, timestampOut, uuid } from '../http/schemas';
import type { OrganizationService } from './service';

const tag = 'Organizations';
export const organizationSchema = z
  .object({ id: uuid, name: z.string(), created_at: timestampOut })
  .meta({ id: 'Organization' });
export const memberSchema = z
  .object({ user_id: uuid, email: z.string(), name: z.string(), role, created_at: timestampOut })
  .meta({ id: 'Member' });
const nameBody = z.strictObject({ name: displayName });
const orgParams = pathParams('orgID');
const memberParams = pathParams('orgID', 'userID');

export function organizationRoutes(orgs: OrganizationService) {
  // Route declarations are a table: the route, then its checks and schemas, then its handler, a line or two each.
  // prettier-ignore
  return [
    defineRoute({
      method: 'post', path: '/admin/orgs', operationId: 'createOrganization', tag,
      summary: 'Create an organization; the caller becomes its admin',
      auth: { kind: 'session' }, body: nameBody, response: organizationSchema, status: 201,
      handler: ({ body, caller }) => orgs.create(body.name, caller.userId),
    }),
    defineRoute({
      method: 'get', path: '/admin/orgs', operationId: 'listOrganizations', tag,
      summary: 'List the organizations the caller belongs to',
      auth: { kind: 'session' }, response: z.array(organizationSchema),
      handler: ({ caller }) => orgs.listForUser(caller.userId),
    }),
    defineRoute({
      method: 'get', path: '/admin/orgs/:orgID', operationId: 'getOrganization', tag, summary: 'Get an organization',
      auth: { kind: 'org', role: 'viewer' }, params: orgParams, response: organizationSchema,
      handler: ({ params }) => orgs.get(params.orgID),
    }),
    defineRoute({
      method: 'patch', path: '/admin/orgs/:orgID', operationId: 'renameOrganization', tag,
      summary: 'Rename an organization',
      auth: { kind: 'org', role: 'admin' }, params: orgParams, body: nameBody, response: organizationSchema,
      handler: ({ params, body }) => orgs.rename(params.orgID, body.name),
    }),
    defineRoute({
      method: 'get', path: '/admin/orgs/:orgID/members', operationId: 'listMembers', tag,
      summary: 'List the members of an organization',
      auth: { kind: 'org', role: 'viewer' }, params: orgParams, response: z.array(memberSchema),
      handler: ({ params }) => orgs.listMembers(params.orgID),
    }),
    defineRoute({
      method: 'post', path: '/admin/orgs/:orgID/members', operationId: 'addMember', tag,
      summary: 'Add a registered user to an organization',
      auth: { kind: 'org', role: 'admin' }, errors: [409], params: orgParams, body: z.strictObject({ email, role }),
      response: memberSchema, status: 201,
      handler: ({ params, body }) => orgs.addMember(params.orgID, body.email, body.role),
    }),
    defineRoute({
      method: 'patch', path: '/admin/orgs/:orgID/members/:userID', operationId: 'changeMemberRole', tag,
      summary: "Change a member's role",
      auth: { kind: 'org', role: 'admin' }, errors: [409], params: memberParams, body: z.strictObject({ role }),
      response: memberSchema,
      handler: ({ params, body }) => orgs.changeRole(params.orgID, params.userID, body.role),
    }),
    defineRoute({
      method: 'delete', path: '/admin/orgs/:orgID/members/:userID', operationId: 'removeMember', tag,
      summary: 'Remove a member from an organization',
      auth: { kind: 'org', role: 'admin' }, errors: [409], params: memberParams, status: 204,
      handler: ({ params }) => orgs.removeMember(params.orgID, params.userID),
    }),
  ];
}
