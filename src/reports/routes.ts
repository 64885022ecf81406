// HTTP declarations of the reports (contract section 5): the run list, the summary and the per-agent health.
import { z } from 'zod';
import type { Clock } from '../clock';
import type { ClickHouseStore, QueryLimits } from '../db/clickhouse';
import { defineRoute } from '../http/route';
import { pathParams, timestamp } from '../http/schemas';
import { RUN_STATUSES, runSchema } from '../runs/model';
import type { FlushBarrier } from '../runs/store';
import { HEALTH_MEASURES, SUMMARY_MEASURES } from './queries';
import { reportService } from './service';

const tag = 'Reports';
const params = pathParams('projectID');

const windowFields = {
  from: timestamp.optional().describe('Start of the window, included (RFC 3339); default now − 30 days'),
  to: timestamp.optional().describe('End of the window, excluded (RFC 3339); default now'),
};
const agentName = z.string().min(1).max(200);

const runsQuery = z.strictObject({
  ...windowFields,
  limit: z.coerce.number().int().min(1).max(1000).default(25),
  offset: z.coerce.number().int().min(0).max(Number.MAX_SAFE_INTEGER).default(0),
  agent_name: agentName.optional(),
  status: z.enum(RUN_STATUSES).optional(),
  loop_detected: z.enum(['true', 'false']).transform((value) => value === 'true').optional(),
});

// Counts are integers; rates, means and percentiles may be fractional.
const INTEGER_FIELDS = new Set(['total_runs', 'prev_total_runs', 'completed_runs', 'loop_runs', 'total_steps', 'total_tool_calls', 'unique_agents', 'unique_tools']);
const numberField = (field: string) => (INTEGER_FIELDS.has(field) ? z.number().int() : z.number());
const numberFields = <K extends string>(fields: readonly K[]) =>
  Object.fromEntries(fields.map((field) => [field, numberField(field)])) as Record<K, z.ZodNumber>;

export const summaryEntrySchema = z.object(numberFields(SUMMARY_MEASURES));
export const healthEntrySchema = z.object({
  agent_name: z.string(),
  ...numberFields(HEALTH_MEASURES),
  prev_total_runs: z.number().int(),
});

export function reportRoutes(ch: ClickHouseStore, clock: Clock, limits: QueryLimits, flushed: FlushBarrier) {
  const reports = reportService(ch, clock, limits);
  return [
    defineRoute({
      method: 'get', path: '/projects/:projectID/agent/runs', tag,
      summary: 'The runs of a window, newest first (then by id, descending); X-Total-Count holds how many match',
      auth: { kind: 'projectRead' }, transport: 'lean', params, query: runsQuery, response: z.array(runSchema),
      handler: async ({ params, query, res }) => {
        await flushed(params.projectID);
        const { current } = reports.windows(query);
        const { limit, offset, from: _from, to: _to, ...filters } = query;
        const page = await reports.listRuns(params.projectID, current, { limit, offset }, filters);
        res.setHeader('X-Total-Count', String(page.total));
        return page.runs;
      },
    }),
    defineRoute({
      method: 'get', path: '/projects/:projectID/agent/summary', tag,
      summary: 'Signals of the runs of a window ("current") and of the window of the same length before it ("previous")',
      auth: { kind: 'projectRead' }, transport: 'lean', params, query: z.strictObject({ ...windowFields, agent_name: agentName.optional() }),
      response: z.object({ current: summaryEntrySchema, previous: summaryEntrySchema }),
      handler: async ({ params, query }) => {
        await flushed(params.projectID);
        return reports.summary(params.projectID, reports.windows(query), query.agent_name);
      },
    }),
    defineRoute({
      method: 'get', path: '/projects/:projectID/agent/health', tag,
      summary: 'One entry per agent with runs in the window or the one before it, by total_runs descending, then agent_name',
      auth: { kind: 'projectRead' }, transport: 'lean', params, query: z.strictObject(windowFields), response: z.array(healthEntrySchema),
      handler: async ({ params, query }) => {
        await flushed(params.projectID);
        return reports.health(params.projectID, reports.windows(query));
      },
    }),
  ];
}
