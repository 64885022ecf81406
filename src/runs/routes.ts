// HTTP declarations for reading back one run and its steps.
import { z } from 'zod';
import { fromClickHouseTime } from '../db/clickhouse';
import { notFound } from '../errors';
import { defineRoute } from '../http/route';
import { pathParams, timestamp } from '../http/schemas';
import type { RetainedFrom } from '../retention/cutoffs';
import { runSchema, stepOutSchema } from './model';
import type { FlushBarrier, LatestRunRow, RunStore } from './store';
import { toRun, toStep } from './tables';

const tag = 'Runs';
const params = pathParams('projectID', 'runID');

export function runRoutes(runs: RunStore, flushed: FlushBarrier, retainedFrom: RetainedFrom) {
  /**
   * The run in its latest state, or 404: also for a run past its project's retention (contract §3), which is gone
   * for every read, its steps included, whether or not the deletion job has reached it yet.
   */
  async function readableRun(projectId: string, id: string, at?: Date): Promise<LatestRunRow> {
    const row = await runs.findLatest(projectId, id, at);
    if (!row || fromClickHouseTime(row.timestamp) < (await retainedFrom(projectId))) throw notFound('run');
    return row;
  }

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
        return toRun(await readableRun(params.projectID, params.runID, query.timestamp));
      },
    }),
    defineRoute({
      method: 'get', path: '/projects/:projectID/agent/runs/:runID/steps', operationId: 'listRunSteps', tag,
      summary: "A run's steps, by index",
      auth: { kind: 'projectRead' }, params, query: z.strictObject({ timestamp }), response: z.array(stepOutSchema),
      handler: async ({ params, query }) => {
        const key = { projectId: params.projectID, id: params.runID, timestamp: query.timestamp };
        await flushed(key.projectId);
        await readableRun(key.projectId, key.id, key.timestamp);
        return (await runs.readSteps(key)).map(toStep);
      },
    }),
  ];
}
