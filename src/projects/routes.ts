// HTTP declarations of projects and API keys (contract section 3).
import { z } from 'zod';
import { defineRoute } from '../http/route';
import { displayName, pathParams, timestampOut, uuid } from '../http/schemas';
import type { ProjectService } from './service';

const projectSchema = z.object({ id: uuid, org_id: uuid, name: z.string(), created_at: timestampOut });
const apiKeySchema = z.object({ id: uuid, name: z.string(), prefix: z.string(), created_at: timestampOut, last_used_at: timestampOut.nullable() });
const nameBody = z.strictObject({ name: displayName });
const orgParams = pathParams('orgID');
const projectParams = pathParams('orgID', 'projectID');
const tag = 'Projects';

export function projectRoutes(projects: ProjectService) {
  return [
    defineRoute({
      method: 'post', path: '/admin/orgs/:orgID/projects', tag, summary: 'Create a project',
      auth: { kind: 'org', role: 'admin' }, params: orgParams, body: nameBody, response: projectSchema, status: 201,
      handler: ({ params, body }) => projects.create(params.orgID, body.name),
    }),
    defineRoute({
      method: 'get', path: '/admin/orgs/:orgID/projects', tag, summary: 'List the projects of an organization',
      auth: { kind: 'org', role: 'viewer' }, params: orgParams, response: z.array(projectSchema),
      handler: ({ params }) => projects.list(params.orgID),
    }),
    defineRoute({
      method: 'patch', path: '/admin/orgs/:orgID/projects/:projectID', tag, summary: 'Rename a project',
      auth: { kind: 'org', role: 'admin' }, params: projectParams, body: nameBody, response: projectSchema,
      handler: ({ params, body }) => projects.rename(params.orgID, params.projectID, body.name),
    }),
    defineRoute({
      method: 'delete', path: '/admin/orgs/:orgID/projects/:projectID', tag, summary: 'Delete a project and its API keys',
      auth: { kind: 'org', role: 'admin' }, params: projectParams, status: 204,
      handler: ({ params }) => projects.remove(params.orgID, params.projectID),
    }),
    defineRoute({
      method: 'post', path: '/admin/orgs/:orgID/projects/:projectID/api-keys', tag, summary: 'Create an API key; the key is shown this once',
      auth: { kind: 'org', role: 'member' }, params: projectParams,
      body: z.strictObject({ name: displayName.optional() }).optional(),
      response: apiKeySchema.extend({ key: z.string() }), status: 201,
      handler: ({ params, body }) => projects.createKey(params.orgID, params.projectID, body?.name ?? 'default'),
    }),
    defineRoute({
      method: 'get', path: '/admin/orgs/:orgID/projects/:projectID/api-keys', tag, summary: 'List the active API keys of a project',
      auth: { kind: 'org', role: 'member' }, params: projectParams, response: z.array(apiKeySchema),
      handler: ({ params }) => projects.listKeys(params.orgID, params.projectID),
    }),
    defineRoute({
      method: 'delete', path: '/admin/orgs/:orgID/projects/:projectID/api-keys/:keyID', tag, summary: 'Revoke an API key',
      auth: { kind: 'org', role: 'member' }, params: pathParams('orgID', 'projectID', 'keyID'), status: 204,
      handler: ({ params }) => projects.revokeKey(params.orgID, params.projectID, params.keyID),
    }),
  ];
}
