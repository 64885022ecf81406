// HTTP declaration of spend and tokens over time, per agent or per model (docs/usage.md; an addition to the contract).
import { z } from 'zod';
import { defineRoute } from '../http/route';
import { count, pathParams, text, timestamp, timestampOut } from '../http/schemas';
import type { FlushBarrier } from '../runs/store';
import { BUCKET_INTERVALS } from '../reports/queries';
import type { usageService } from './service';

const totals = {
  cost_usd: z.number().describe('Dollars'),
  tokens: count,
  buckets: z.array(z.object({ start: timestampOut, cost_usd: z.number(), tokens: count }).meta({ id: 'UsageBucket' })),
};
export const usageSchema = z
  .object({
    bucket: z.enum(Object.keys(BUCKET_INTERVALS) as [keyof typeof BUCKET_INTERVALS]),
    by: z.enum(['agent', 'model']),
    groups: z.array(
      z
        .object({
          name: z.string().nullable().describe('The agent or the model; null: steps that name no model'),
          ...totals,
        })
        .meta({ id: 'UsageGroup' }),
    ),
    others: z
      .object({ groups: count.describe('How many groups are summed here'), ...totals })
      .nullable()
      .describe('The groups past the 20 that spent most, summed; null when there are none'),
  })
  .meta({ id: 'Usage' });

export function usageRoutes(usage: ReturnType<typeof usageService>, flushed: FlushBarrier) {
  // Route declarations are a table: the route, then its checks and schemas, then its handler, a line or two each.
  // prettier-ignore
  return [
    defineRoute({
      method: 'get', path: '/projects/:projectID/agent/usage', operationId: 'getUsage', tag: 'Reports',
      summary:
        "Spend and tokens of the window's finished runs in UTC-aligned buckets (as the time series' auto), " +
        'per agent (their runs) or per model (their steps), the groups that spent most first',
      auth: { kind: 'projectRead' }, params: pathParams('projectID'),
      query: z.strictObject({
        from: timestamp.optional().describe('Start of the window, included (RFC 3339); default now − 30 days'),
        to: timestamp.optional().describe('End of the window, excluded (RFC 3339); default now'),
        by: z.enum(['agent', 'model']).describe('agent: the runs of each agent; model: the steps of each model'),
        agent_name: text().min(1).max(200).optional().describe('Only the runs of this agent'),
      }),
      response: usageSchema,
      handler: async ({ params, query }) => {
        await flushed(params.projectID);
        return usage.usage(params.projectID, query);
      },
    }),
  ];
}
