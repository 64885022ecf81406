// Spend and tokens over time, per agent or per model (docs/usage.md): the window in UTC-aligned buckets as the time
// series has it (contract §9), one series per group, the groups that spent most first. No HTTP here.
import type { Clock } from '../clock';
import { toClickHouseTime, type ClickHouseStore, type QueryLimits } from '../db/clickhouse';
import { resolveWindows } from '../reports/service';
import type { RetainedFrom } from '../retention/cutoffs';
import { reportQuery } from '../reports/durations';
import { readMeasures } from '../reports/measures';
import { GROUP_KEYS, timeseriesKeys } from '../reports/queries';
import { alone, reportShape, windowParams } from '../reports/rollups';
import type { TimeRange } from '../reports/window-runs';
import { selectUsageByModel, type BucketUnit } from './queries';

export type UsageGrouping = 'agent' | 'model';

/** Groups listed one by one, the most spent first; the others are summed into one. */
export const MAX_GROUPS = 20;
const BUCKET_MS: Record<BucketUnit, number> = { minute: 60_000, hour: 3_600_000, day: 86_400_000 };
/** As the time series' `auto` (contract §9): the smallest unit that gives at most this many buckets. */
const MAX_BUCKETS = 200;

export interface UsageBucket {
  start: string;
  cost_usd: number;
  tokens: number;
}
export interface UsageTotals {
  cost_usd: number;
  tokens: number;
  buckets: UsageBucket[];
}
export interface Usage {
  bucket: BucketUnit;
  by: UsageGrouping;
  groups: (UsageTotals & { name: string | null })[];
  others: (UsageTotals & { groups: number }) | null;
}

interface UsageRow {
  name: string;
  bucket_start: number | string;
  cost_usd: number | string;
  tokens: number | string;
}

/** The starts of the UTC-aligned buckets of the smallest unit that cuts [from, to) into at most MAX_BUCKETS. */
function bucketsOf(from: Date, to: Date): { unit: BucketUnit; starts: number[] } {
  const startsOf = (unit: BucketUnit) => {
    const size = BUCKET_MS[unit];
    const starts: number[] = [];
    for (let start = Math.floor(from.getTime() / size) * size; start < to.getTime(); start += size) {
      if (starts.push(start) > MAX_BUCKETS && unit !== 'day') return undefined;
    }
    return starts;
  };
  for (const unit of ['minute', 'hour'] as const) {
    const starts = startsOf(unit);
    if (starts) return { unit, starts };
  }
  // A window is at most 400 days (resolveWindows): day buckets always do.
  return { unit: 'day', starts: startsOf('day')! };
}

/** A group's rows as totals and one bucket per start, empty ones with zeros. */
function totalsOf(rows: readonly UsageRow[], starts: readonly number[]): UsageTotals {
  const byStart = new Map<number, { cost: number; tokens: number }>();
  for (const row of rows) {
    const start = Number(row.bucket_start);
    const sum = byStart.get(start) ?? { cost: 0, tokens: 0 };
    byStart.set(start, { cost: sum.cost + Number(row.cost_usd), tokens: sum.tokens + Number(row.tokens) });
  }
  const buckets = starts.map((start) => ({
    start: new Date(start).toISOString(),
    cost_usd: byStart.get(start)?.cost ?? 0,
    tokens: byStart.get(start)?.tokens ?? 0,
  }));
  return {
    cost_usd: buckets.reduce((sum, bucket) => sum + bucket.cost_usd, 0),
    tokens: buckets.reduce((sum, bucket) => sum + bucket.tokens, 0),
    buckets,
  };
}

export function usageService(ch: ClickHouseStore, clock: Clock, limits: QueryLimits, retainedFrom: RetainedFrom) {
  const query = reportQuery(ch, limits);

  /**
   * Each agent's spend and tokens per bucket, as the time series reads its measures (reports/measures.ts): whole
   * hours from the hourly rollups of `runs` (one row per agent and hour), the rest from rows.
   */
  async function usageByAgent(projectId: string, window: TimeRange, unit: BucketUnit, agentName?: string) {
    const windows = alone(window);
    const rows = await readMeasures(query, {
      name: 'usage.by_agent',
      keys: { name: GROUP_KEYS.agent_name, ...timeseriesKeys(unit) },
      measures: ['total_cost_usd', 'total_tokens'],
      filters: agentName === undefined ? [] : ['agent_name'],
      shape: unit === 'minute' ? 'raw' : reportShape(windows.previous, windows.current),
      grain: unit === 'day' ? 'day' : 'hour',
      params: {
        ...windowParams(projectId, windows, clock.now()),
        ...(agentName === undefined ? {} : { agent_name: agentName }),
      },
    });
    return rows.map((row) => ({
      name: String(row.name),
      bucket_start: Number(row.bucket_start),
      cost_usd: Number(row.total_cost_usd),
      tokens: Number(row.total_tokens),
    }));
  }

  return {
    async usage(
      projectId: string,
      sent: { from?: Date; to?: Date; by: UsageGrouping; agent_name?: string },
    ): Promise<Usage> {
      const { from, to } = resolveWindows(sent, clock.now()).current;
      const { unit, starts } = bucketsOf(from, to);
      // Runs past the project's retention are never counted (contract §3): their buckets stay, empty.
      const retained = await retainedFrom(projectId);
      const start = from < retained ? retained : from;
      const window = { from: start, to };
      const rows =
        start >= to
          ? []
          : sent.by === 'agent'
            ? await usageByAgent(projectId, window, unit, sent.agent_name)
            : await ch.query<UsageRow>({
                name: 'usage.by_model',
                sql: selectUsageByModel(unit, sent.agent_name !== undefined),
                params: {
                  project_id: projectId,
                  window_start: toClickHouseTime(start),
                  window_end: toClickHouseTime(to),
                  ...(sent.agent_name === undefined ? {} : { agent_name: sent.agent_name }),
                },
                limits,
              });
      const byName = new Map<string, UsageRow[]>();
      for (const row of rows) byName.set(row.name, [...(byName.get(row.name) ?? []), row]);
      const groups = [...byName]
        .map(([name, groupRows]) => ({ name: name === '' ? null : name, ...totalsOf(groupRows, starts) }))
        .sort((a, b) => b.cost_usd - a.cost_usd || b.tokens - a.tokens || (String(a.name) < String(b.name) ? -1 : 1));
      const rest = groups.slice(MAX_GROUPS);
      return {
        bucket: unit,
        by: sent.by,
        groups: groups.slice(0, MAX_GROUPS),
        others:
          rest.length === 0
            ? null
            : {
                groups: rest.length,
                ...totalsOf(
                  rest.flatMap((group) =>
                    group.buckets.map((bucket) => ({
                      name: '',
                      bucket_start: Date.parse(bucket.start),
                      cost_usd: bucket.cost_usd,
                      tokens: bucket.tokens,
                    })),
                  ),
                  starts,
                ),
              },
      };
    },
  };
}
