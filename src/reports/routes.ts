// HTTP declarations of the reports (contract section 5): the run list, the summary and the per-agent health.
import { z } from 'zod';
import { defineRoute } from '../http/route';
import { count, pagingFields, pathParams, text, timestamp, timestampOut } from '../http/schemas';
import { RUN_STATUSES, runSchema } from '../runs/model';
import type { FlushBarrier } from '../runs/store';
import { BUCKET_INTERVALS, HEALTH_MEASURES, SUMMARY_MEASURES, TIMESERIES_MEASURES } from './queries';
import type { reportService } from './service';

const tag = 'Reports';
const params = pathParams('projectID');

const windowFields = {
  from: timestamp.optional().describe('Start of the window, included (RFC 3339); default now − 30 days'),
  to: timestamp.optional().describe('End of the window, excluded (RFC 3339); default now'),
};
const agentName = text().min(1).max(200);

const runsQuery = z.strictObject({
  ...windowFields,
  ...pagingFields(25),
  agent_name: agentName.optional(),
  status: z.enum(RUN_STATUSES).optional(),
  loop_detected: z
    .enum(['true', 'false'])
    .transform((value) => value === 'true')
    .optional(),
});

// Counts are integers; rates, means and percentiles may be fractional.
const INTEGER_FIELDS = new Set([
  'total_runs',
  'prev_total_runs',
  'completed_runs',
  'loop_runs',
  'total_steps',
  'total_tool_calls',
  'unique_agents',
  'unique_tools',
]);
const numberField = (field: string) => (INTEGER_FIELDS.has(field) ? count : z.number());
const numberFields = <K extends string>(fields: readonly K[]) =>
  Object.fromEntries(fields.map((field) => [field, numberField(field)])) as Record<K, z.ZodNumber>;

export const summaryEntrySchema = z.object(numberFields(SUMMARY_MEASURES)).meta({ id: 'SummaryEntry' });
export const healthEntrySchema = z
  .object({
    agent_name: z.string(),
    ...numberFields(HEALTH_MEASURES),
    prev_total_runs: count,
  })
  .meta({ id: 'HealthEntry' });

const bucketUnits = Object.keys(BUCKET_INTERVALS) as (keyof typeof BUCKET_INTERVALS)[];
const timeseriesQuery = z.strictObject({
  ...windowFields,
  agent_name: agentName.optional(),
  bucket: z
    .enum([...bucketUnits, 'auto'])
    .default('auto')
    .describe('minute, hour, day, or auto: the smallest giving at most 200 buckets'),
});
export const timeseriesSchema = z
  .object({
    bucket: z.enum(bucketUnits),
    buckets: z.array(
      z.object({ start: timestampOut, ...numberFields(TIMESERIES_MEASURES) }).meta({ id: 'TimeseriesBucket' }),
    ),
  })
  .meta({ id: 'Timeseries' });

export function reportRoutes(reports: ReturnType<typeof reportService>, flushed: FlushBarrier) {
  // Route declarations are a table: the route, then its checks and schemas, then its handler, a line or two each.
  // prettier-ignore
  return [
    defineRoute({
      method: 'get', path: '/projects/:projectID/agent/runs', operationId: 'listRuns', tag,
      summary: 'The runs of a window, newest first (then by id, descending); X-Total-Count holds how many match',
      auth: { kind: 'projectRead' }, params, query: runsQuery, response: z.array(runSchema),
      responseHeaders: { 'X-Total-Count': count.describe('How many runs match, before limit and offset') },
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
      method: 'get', path: '/projects/:projectID/agent/summary', operationId: 'getSummary', tag,
      summary:
        'Signals of the runs of a window ("current") and of the window of the same length before it ("previous")',
      auth: { kind: 'projectRead' }, params,
      query: z.strictObject({ ...windowFields, agent_name: agentName.optional() }),
      response: z.object({ current: summaryEntrySchema, previous: summaryEntrySchema }).meta({ id: 'Summary' }),
      handler: async ({ params, query }) => {
        await flushed(params.projectID);
        return reports.summary(params.projectID, reports.windows(query), query.agent_name);
      },
    }),
    defineRoute({
      method: 'get', path: '/projects/:projectID/agent/timeseries', operationId: 'getTimeseries', tag,
      summary:
        "The window in UTC-aligned buckets, each with the summary's measures (but its distinct counts); " +
        'empty buckets with zeros',
      auth: { kind: 'projectRead' }, params, query: timeseriesQuery, response: timeseriesSchema,
      handler: async ({ params, query }) => {
        await flushed(params.projectID);
        return reports.timeseries(params.projectID, reports.windows(query).current, query.bucket, query.agent_name);
      },
    }),
    defineRoute({
      method: 'get', path: '/projects/:projectID/agent/health', operationId: 'listAgentHealth', tag,
      summary:
        'One entry per agent with runs in the window or the one before it, by total_runs descending, then agent_name',
      auth: { kind: 'projectRead' }, params, query: z.strictObject(windowFields), response: z.array(healthEntrySchema),
      handler: async ({ params, query }) => {
        await flushed(params.projectID);
        return reports.health(params.projectID, reports.windows(query));
      },
    }),
  ];
}
