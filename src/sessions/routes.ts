// HTTP declarations of the sessions (contract §10): the list of a window's sessions, and one session with its runs.
import { z } from 'zod';
import type { Clock } from '../clock';
import { defineRoute } from '../http/route';
import { count, pagingFields, pathParams, text, timestampOut, uuid } from '../http/schemas';
import { windowFields } from '../reports/routes';
import { resolveWindows } from '../reports/service';
import { runSchema } from '../runs/model';
import type { FlushBarrier } from '../runs/store';
import type { SessionService } from './service';

const tag = 'Sessions';
const clientId = text().min(1).max(200);

export const sessionSchema = z
  .object({
    session_id: z.string(),
    user_ids: z.array(z.string()).describe('distinct, at most 10'),
    agents: z.array(z.string()).describe('distinct agent names'),
    first_run_at: timestampOut,
    last_run_at: timestampOut,
    total_runs: count,
    running_runs: count,
    completed_runs: count,
    failed_runs: count.describe('finished, not completed'),
    loop_runs: count,
    total_steps: count,
    total_tokens: count,
    total_cost_usd: z.number(),
    duration_ms: count.describe('the latest finish (or now, while one of its runs runs) minus the first start'),
  })
  .meta({ id: 'Session' });

const listQuery = z.strictObject({
  ...windowFields,
  ...pagingFields(25),
  agent_name: clientId.optional(),
  user_id: clientId.optional(),
});

export function sessionRoutes(sessions: SessionService, flushed: FlushBarrier, clock: Clock) {
  const windowOf = (query: { from?: Date; to?: Date }) => resolveWindows(query, clock.now()).current;
  // Route declarations are a table: the route, then its checks and schemas, then its handler, a line or two each.
  // prettier-ignore
  return [
    defineRoute({
      method: 'get', path: '/projects/:projectID/agent/sessions', operationId: 'listSessions', tag,
      summary: 'The sessions with runs in the window, by last run (newest first), then session_id; X-Total-Count ' +
        'holds how many. Figures count the runs of the window that match the filters',
      auth: { kind: 'projectRead' }, params: pathParams('projectID'), query: listQuery,
      response: z.array(sessionSchema),
      responseHeaders: { 'X-Total-Count': count.describe('How many sessions, before limit and offset') },
      handler: async ({ params, query, res }) => {
        await flushed(params.projectID);
        const { limit, offset, from, to, ...filters } = query;
        const page = await sessions.list(params.projectID, windowOf({ from, to }), { limit, offset }, filters);
        res.setHeader('X-Total-Count', String(page.total));
        return page.sessions;
      },
    }),
    defineRoute({
      method: 'get', path: '/projects/:projectID/agent/sessions/:sessionID', operationId: 'getSession', tag,
      summary: 'A session over the window, and its runs of the window in start order (at most 1000; X-Total-Count ' +
        'holds how many)',
      auth: { kind: 'projectRead' }, params: z.strictObject({ projectID: uuid, sessionID: clientId }),
      query: z.strictObject(windowFields),
      response: z.object({ session: sessionSchema, runs: z.array(runSchema) }).meta({ id: 'SessionDetail' }),
      responseHeaders: { 'X-Total-Count': count.describe("How many runs the session has in the window") },
      handler: async ({ params, query, res }) => {
        await flushed(params.projectID);
        const detail = await sessions.get(params.projectID, params.sessionID, windowOf(query));
        res.setHeader('X-Total-Count', String(detail.session.total_runs));
        return detail;
      },
    }),
  ];
}
