// HTTP declarations of the reports (contract section 5): the run list, the summary and the per-agent health.
import { z } from 'zod';
import { defineRoute } from '../http/route';
import {
  count,
  pagingFields,
  pathParams,
  queryInteger,
  storedText,
  text,
  timestamp,
  timestampOut,
} from '../http/schemas';
import { StreamedBody } from '../http/route';
import { RUN_STATUSES, runSchema } from '../runs/model';
import type { FlushBarrier } from '../runs/store';
import { BUCKET_INTERVALS, HEALTH_MEASURES, SUMMARY_MEASURES, TIMESERIES_MEASURES } from './queries';
import { EXPORT_FORMATS, type ExportFormat } from './run-export';
import type { reportService } from './service';

const tag = 'Reports';
const params = pathParams('projectID');

export const windowFields = {
  from: timestamp.optional().describe('Start of the window, included (RFC 3339); default now − 30 days'),
  to: timestamp.optional().describe('End of the window, excluded (RFC 3339); default now'),
};
const agentName = text().min(1).max(200);
// A session's or a user's id (contract §10).
const clientId = text().min(1).max(200);

const tagText = text().min(1).max(100);
/** A non-negative decimal number in a query string (`0.25`, `3`): money. */
const queryDecimal = z
  .string()
  .refine((value) => /^\d{1,15}(\.\d{1,15})?$/.test(value), 'must be a non-negative decimal number')
  .transform(Number)
  .meta({ type: 'number', minimum: 0 });
const MAX_MS = Number.MAX_SAFE_INTEGER;

/** The runs list's filters (contract §5, §10, §11), which the export takes too. */
export const runFilterFields = {
  agent_name: agentName.optional(),
  status: z.enum(RUN_STATUSES).optional(),
  loop_detected: z
    .enum(['true', 'false'])
    .transform((value) => value === 'true')
    .optional(),
  session_id: clientId.optional(),
  user_id: clientId.optional(),
  tag: z
    .union([tagText, z.array(tagText).max(50)])
    .transform((value) => (typeof value === 'string' ? [value] : value))
    .optional()
    .describe('Repeatable (tag=a&tag=b): a run must carry every one'),
  model: text().min(1).max(200).optional().describe('Runs with an llm step of this model'),
  tool_name: text().min(1).max(200).optional().describe('Runs with a tool step of this name'),
  min_duration_ms: queryInteger(0, MAX_MS).optional().describe('Finished runs at least this long'),
  max_duration_ms: queryInteger(0, MAX_MS).optional().describe('Finished runs at most this long'),
  min_cost_usd: queryDecimal.optional().describe('Runs that cost at least this much (US dollars)'),
  max_cost_usd: queryDecimal.optional().describe('Runs that cost at most this much (US dollars)'),
  q: storedText()
    .min(3)
    .max(200)
    .optional()
    .describe(
      "Text search, case-insensitive: in the run's input, output or termination_detail, or its steps' " +
        'input, output or error',
    ),
};

const runsQuery = z.strictObject({ ...windowFields, ...pagingFields(25), ...runFilterFields });

const exportQuery = z
  .strictObject({
    ...windowFields,
    ...runFilterFields,
    limit: queryInteger(1, 1_000_000).default(100_000),
    format: z.enum(Object.keys(EXPORT_FORMATS) as [ExportFormat, ...ExportFormat[]]).default('jsonl'),
    include_steps: z
      .enum(['true', 'false'])
      .transform((value) => value === 'true')
      .default(false)
      .describe("true adds each run's steps (jsonl and parquet)"),
  })
  .refine((query) => !(query.include_steps && query.format === 'csv'), {
    message: 'steps cannot be nested in CSV; take jsonl or parquet',
    path: ['include_steps'],
  });

/** `2026-11-27T09:15:00.000Z` as a file name's part: `20261127T091500Z`. */
const fileTime = (date: Date) => date.toISOString().replace(/[-:]|\.\d{3}/g, '');

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
  user_id: clientId.optional(),
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
      method: 'get', path: '/projects/:projectID/agent/runs/export', operationId: 'exportRuns', tag,
      summary: "The runs list's runs of a window, all of them up to limit, as a file: CSV, JSON Lines or Parquet",
      auth: { kind: 'projectRead' }, params, query: exportQuery,
      streamed: {
        [EXPORT_FORMATS.jsonl.mediaType]: { description: 'format=jsonl: one Run (with steps on request) a line' },
        [EXPORT_FORMATS.csv.mediaType]: { description: 'format=csv: a header, then one Run a line; arrays as JSON' },
        [EXPORT_FORMATS.parquet.mediaType]: { description: 'format=parquet: one Run a row', binary: true },
      },
      handler: async ({ params, query }) => {
        await flushed(params.projectID);
        const { current } = reports.windows(query);
        const { limit, format, include_steps, from: _from, to: _to, ...filters } = query;
        const body = await reports.exportRuns(params.projectID, current, { format, limit, includeSteps: include_steps,
          filters });
        const name = `runs-${params.projectID}-${fileTime(current.from)}-${fileTime(current.to)}`;
        return new StreamedBody(EXPORT_FORMATS[format].mediaType, body, {
          'Content-Disposition': `attachment; filename="${name}.${EXPORT_FORMATS[format].extension}"`,
        });
      },
    }),
    defineRoute({
      method: 'get', path: '/projects/:projectID/agent/summary', operationId: 'getSummary', tag,
      summary:
        'Signals of the runs of a window ("current") and of the window of the same length before it ("previous")',
      auth: { kind: 'projectRead' }, params,
      query: z.strictObject({ ...windowFields, agent_name: agentName.optional(), user_id: clientId.optional() }),
      response: z.object({ current: summaryEntrySchema, previous: summaryEntrySchema }).meta({ id: 'Summary' }),
      handler: async ({ params, query }) => {
        await flushed(params.projectID);
        const { from: _from, to: _to, ...filters } = query;
        return reports.summary(params.projectID, reports.windows(query), filters);
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
        const { agent_name, user_id } = query;
        return reports.timeseries(params.projectID, reports.windows(query).current, query.bucket, {
          agent_name,
          user_id,
        });
      },
    }),
    defineRoute({
      method: 'get', path: '/projects/:projectID/agent/health', operationId: 'listAgentHealth', tag,
      summary:
        'One entry per agent with runs in the window or the one before it, by total_runs descending, then agent_name',
      auth: { kind: 'projectRead' }, params, query: z.strictObject({ ...windowFields, user_id: clientId.optional() }),
      response: z.array(healthEntrySchema),
      handler: async ({ params, query }) => {
        await flushed(params.projectID);
        return reports.health(params.projectID, reports.windows(query), { user_id: query.user_id });
      },
    }),
  ];
}
