// HTTP declarations of projects and API keys (contract section 3).
import { z } from 'zod';
import { defineRoute } from '../http/route';
import { displayName, pathParams, timestampOut, uuid } from '../http/schemas';
import { DEFAULT_RETENTION_DAYS } from '../retention/cutoffs';
import type { ProjectService } from './service';

export const projectSchema = z
  .object({ id: uuid, org_id: uuid, name: z.string(), retention_days: z.number().int(), created_at: timestampOut })
  .meta({ id: 'Project' });
export const apiKeySchema = z
  .object({
    id: uuid,
    name: z.string(),
    prefix: z.string(),
    created_at: timestampOut,
    last_used_at: timestampOut.nullable(),
  })
  .meta({ id: 'ApiKey' });
const retentionDays = z.number().int().min(1).max(3650).describe('days runs and steps are kept (contract §3)');
const createBody = z.strictObject({ name: displayName, retention_days: retentionDays.default(DEFAULT_RETENTION_DAYS) });
const updateBody = z
  .strictObject({ name: displayName.optional(), retention_days: retentionDays.optional() })
  .refine((body) => body.name !== undefined || body.retention_days !== undefined, {
    message: 'is required unless retention_days is sent',
    path: ['name'],
  });
const base = '/admin/orgs/:orgID/projects';
const orgParams = pathParams('orgID');
const projectParams = pathParams('orgID', 'projectID');
const tag = 'Projects';

export function projectRoutes(projects: ProjectService) {
  // Route declarations are a table: the route, then its checks and schemas, then its handler, a line or two each.
  // prettier-ignore
  return [
    defineRoute({
      method: 'post', path: base, operationId: 'createProject', tag, summary: 'Create a project',
      auth: { kind: 'org', role: 'admin' }, errors: [409], params: orgParams, body: createBody, response: projectSchema,
      status: 201,
      handler: ({ params, body }) => projects.create(params.orgID, body.name, body.retention_days),
    }),
    defineRoute({
      method: 'get', path: base, operationId: 'listProjects', tag, summary: 'List the projects of an organization',
      auth: { kind: 'org', role: 'viewer' }, params: orgParams, response: z.array(projectSchema),
      handler: ({ params }) => projects.list(params.orgID),
    }),
    defineRoute({
      method: 'patch', path: `${base}/:projectID`, operationId: 'updateProject', tag,
      summary: 'Rename a project or change its retention',
      auth: { kind: 'org', role: 'admin' }, errors: [409], params: projectParams, body: updateBody,
      response: projectSchema,
      handler: ({ params, body }) => projects.update(params.orgID, params.projectID, body),
    }),
    defineRoute({
      method: 'delete', path: `${base}/:projectID`, operationId: 'deleteProject', tag,
      summary: 'Delete a project, its API keys, and (within a day) its runs and steps',
      auth: { kind: 'org', role: 'admin' }, params: projectParams, status: 204,
      handler: ({ params }) => projects.remove(params.orgID, params.projectID),
    }),
    defineRoute({
      method: 'post', path: `${base}/:projectID/api-keys`, operationId: 'createApiKey', tag,
      summary: 'Create an API key; the key is shown this once',
      auth: { kind: 'org', role: 'member' }, params: projectParams,
      body: z.strictObject({ name: displayName.optional() }).optional(),
      response: apiKeySchema.extend({ key: z.string() }).meta({ id: 'ApiKeyCreated' }), status: 201,
      handler: ({ params, body }) => projects.createKey(params.orgID, params.projectID, body?.name ?? 'default'),
    }),
    defineRoute({
      method: 'get', path: `${base}/:projectID/api-keys`, operationId: 'listApiKeys', tag,
      summary: 'List the active API keys of a project',
      auth: { kind: 'org', role: 'member' }, params: projectParams, response: z.array(apiKeySchema),
      handler: ({ params }) => projects.listKeys(params.orgID, params.projectID),
    }),
    defineRoute({
      method: 'delete', path: `${base}/:projectID/api-keys/:keyID`, operationId: 'revokeApiKey', tag,
      summary: 'Revoke an API key',
      auth: { kind: 'org', role: 'member' }, params: pathParams('orgID', 'projectID', 'keyID'), status: 204,
      handler: ({ params }) => projects.revokeKey(params.orgID, params.projectID, params.keyID),
    }),
  ];
}
