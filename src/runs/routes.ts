// HTTP declarations for reading back one run and its steps.
import { z } from 'zod';
import { notFound } from '../errors';
import { defineRoute } from '../http/route';
import { pathParams, timestamp } from '../http/schemas';
import { runSchema, stepOutSchema } from './model';
import type { FlushBarrier, RunStore } from './store';
import { toRun, toStep } from './tables';

const tag = 'Runs';
const params = pathParams('projectID', 'runID');

export function runRoutes(runs: RunStore, flushed: FlushBarrier) {
  // Route declarations are a table: the route, then its checks and schemas, then its handler, a line or two each.
  // prettier-ignore
  return [
    defineRoute({
      method: 'get', path: '/projects/:projectID/agent/runs/:runID', operationId: 'getRun', tag,
      summary: 'One run in its latest state; `timestamp` (its start time) makes the lookup direct',
      auth: { kind: 'projectRead' }, params, query: z.strictObject({ timestamp: timestamp.optional() }),
      response: runSchema,
      handler: async ({ params, query }) => {
        await flushed(params.projectID);
        const row = await runs.findLatest(params.projectID, params.runID, query.timestamp);
        if (!row) throw notFound('run');
        return toRun(row);
      },
    }),
    defineRoute({
      method: 'get', path: '/projects/:projectID/agent/runs/:runID/steps', operationId: 'listRunSteps', tag,
      summary: "A run's steps, by index",
      auth: { kind: 'projectRead' }, params, query: z.strictObject({ timestamp }), response: z.array(stepOutSchema),
      handler: async ({ params, query }) => {
        const key = { projectId: params.projectID, id: params.runID, timestamp: query.timestamp };
        await flushed(key.projectId);
        if (!(await runs.findLatest(key.projectId, key.id, key.timestamp))) throw notFound('run');
        return (await runs.readSteps(key)).map(toStep);
      },
    }),
  ];
}
