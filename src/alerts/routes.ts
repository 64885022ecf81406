// HTTP declarations of alert rules (contract section 7): admins write, every member (viewers included) reads and
// previews.
import { z } from 'zod';
import { defineRoute } from '../http/route';
import { pathParams } from '../http/schemas';
import {
  alertEventSchema,
  alertRuleSchema,
  alertRuleWithStateSchema,
  createRuleBody,
  draftRuleBody,
  eventsQuery,
  patchRuleBody,
  previewResultSchema,
} from './schemas';
import type { AlertRuleService } from './service';

const tag = 'Alert rules';
const base = '/admin/orgs/:orgID/projects/:projectID/alert-rules';
const projectParams = pathParams('orgID', 'projectID');
const ruleParams = pathParams('orgID', 'projectID', 'ruleID');

export function alertRoutes(rules: AlertRuleService) {
  // Route declarations are a table: the route, then its checks and schemas, then its handler, a line or two each.
  // prettier-ignore
  return [
    // Declared before `/:ruleID` routes; `preview` is not a UUID, so it could never match them anyway.
    defineRoute({
      method: 'post', path: `${base}/preview`, operationId: 'previewAlertRule', tag,
      summary: 'Evaluate a draft rule now, over [now − window_seconds, now); nothing is saved (aggregate signals only)',
      auth: { kind: 'org', role: 'viewer' }, params: projectParams, body: draftRuleBody, response: previewResultSchema,
      handler: ({ params, body }) => rules.preview(params.orgID, params.projectID, body),
    }),
    defineRoute({
      method: 'post', path: base, operationId: 'createAlertRule', tag,
      summary: 'Create an alert rule; a generated webhook secret is shown this once',
      auth: { kind: 'org', role: 'admin' }, params: projectParams, body: createRuleBody, response: alertRuleSchema,
      status: 201,
      handler: ({ params, body }) => rules.create(params.orgID, params.projectID, body),
    }),
    defineRoute({
      method: 'get', path: base, operationId: 'listAlertRules', tag,
      summary: 'List the alert rules of a project, by creation time',
      auth: { kind: 'org', role: 'viewer' }, params: projectParams, response: z.array(alertRuleWithStateSchema),
      handler: ({ params }) => rules.list(params.orgID, params.projectID),
    }),
    defineRoute({
      method: 'get', path: `${base}/:ruleID`, operationId: 'getAlertRule', tag,
      summary: 'Get an alert rule with its evaluation state and last error',
      auth: { kind: 'org', role: 'viewer' }, params: ruleParams, response: alertRuleWithStateSchema,
      handler: ({ params }) => rules.get(params.orgID, params.projectID, params.ruleID),
    }),
    defineRoute({
      method: 'patch', path: `${base}/:ruleID`, operationId: 'updateAlertRule', tag,
      summary: 'Replace the fields sent; disabling or redefining a firing rule resolves it',
      auth: { kind: 'org', role: 'admin' }, params: ruleParams, body: patchRuleBody, response: alertRuleSchema,
      handler: ({ params, body }) => rules.update(params.orgID, params.projectID, params.ruleID, body),
    }),
    defineRoute({
      method: 'delete', path: `${base}/:ruleID`, operationId: 'deleteAlertRule', tag,
      summary: 'Delete an alert rule with its history',
      auth: { kind: 'org', role: 'admin' }, params: ruleParams, status: 204,
      handler: ({ params }) => rules.remove(params.orgID, params.projectID, params.ruleID),
    }),
    defineRoute({
      method: 'get', path: `${base}/:ruleID/events`, operationId: 'listAlertEvents', tag,
      summary: "A rule's events, newest first",
      auth: { kind: 'org', role: 'viewer' }, params: ruleParams, query: eventsQuery,
      response: z.array(alertEventSchema),
      handler: ({ params, query }) => rules.events(params.orgID, params.projectID, params.ruleID, query),
    }),
  ];
}
