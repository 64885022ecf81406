// The report logic (contract section 5): resolves windows, runs the report queries, shapes their rows. No HTTP here.
import { DAY_MS, HOUR_MS, type Clock } from '../clock';
import type { ClickHouseStore, QueryLimits } from '../db/clickhouse';
import { AppError } from '../errors';
import { STORABLE_TIMES } from '../http/schemas';
import type { RetainedFrom } from '../retention/cutoffs';
import * as q from './queries';
import { reportQuery } from './durations';
import { readMeasures } from './measures';
import { alone, reportShape, windowParams, type ReportShape, type ReportWindows } from './rollups';
import type { RunFilterValues } from './run-filters';
import { streamExport, type ExportRequest } from './run-export';
import { readRunPage, type Page } from './run-list';
import { runRates } from './run-rate';
export type { Page } from './run-list';
export type { ReportWindows } from './rollups';
import type { Measure } from './signals';
import { retainedPart, type TimeRange } from './window-runs';

export const DEFAULT_WINDOW_DAYS = 30;
export const MAX_WINDOW_DAYS = 400;

export type SummaryEntry = Record<(typeof q.SUMMARY_MEASURES)[number], number>;
export type HealthEntry = { agent_name: string; prev_total_runs: number } & Record<
  (typeof q.HEALTH_MEASURES)[number],
  number
>;
export type TimeseriesBucket = { start: string } & Record<(typeof q.TIMESERIES_MEASURES)[number], number>;

/** The filters of summary, health, time series and previews (health takes user_id only): contract §5, §10. */
export type ReportFilters = Partial<Record<'agent_name' | 'user_id', string>>;
const usedFilters = (filters: ReportFilters) =>
  (['agent_name', 'user_id'] as const).filter((filter) => filters[filter] !== undefined);
const filterParams = (filters: ReportFilters) =>
  Object.fromEntries(usedFilters(filters).map((filter) => [filter, filters[filter]]));
const BUCKET_MS: Record<q.BucketUnit, number> = { minute: 60_000, hour: HOUR_MS, day: DAY_MS };
/** `auto` takes the smallest bucket that gives at most this many; no window may ask for more than MAX_BUCKETS. */
const AUTO_MAX_BUCKETS = 200;
/**
 * A time series reads raw rows up to this many times REPORT_RAW_MAX_RUNS: its rollups cost more than a summary's
 * (at 10 M runs, 30 days by the hour: raw 456 ms, rollups 606 ms over 5 M runs; docs/reports.md).
 */
const TIMESERIES_RAW_FACTOR = 5;
const MAX_BUCKETS = 1500;

const invalidWindow = (message: string) => new AppError(400, 'invalid_window', message);

const firstBucket = (from: Date, unit: q.BucketUnit) => Math.floor(from.getTime() / BUCKET_MS[unit]) * BUCKET_MS[unit];
/** How many UTC-aligned buckets of a unit overlap a window. */
const bucketCount = ({ from, to }: TimeRange, unit: q.BucketUnit) =>
  Math.ceil((to.getTime() - firstBucket(from, unit)) / BUCKET_MS[unit]);

/** The starts of the UTC-aligned buckets of a unit that overlap a window, in order. */
function bucketStarts(window: TimeRange, unit: q.BucketUnit): number[] {
  const count = bucketCount(window, unit);
  if (count > MAX_BUCKETS)
    throw invalidWindow(`the window would have ${count} ${unit} buckets; at most ${MAX_BUCKETS}`);
  const first = firstBucket(window.from, unit);
  return Array.from({ length: count }, (_, i) => first + i * BUCKET_MS[unit]);
}

/** from/to as sent, with the contract's defaults (now − 30 days, now); "now" is the service's clock. */
export function resolveWindows(sent: { from?: Date; to?: Date }, now: Date): ReportWindows {
  const from = sent.from ?? new Date(now.getTime() - DEFAULT_WINDOW_DAYS * DAY_MS);
  const to = sent.to ?? now;
  const length = to.getTime() - from.getTime();
  if (length <= 0) throw invalidWindow('from must be before to');
  if (length > MAX_WINDOW_DAYS * DAY_MS) throw invalidWindow(`the window must be at most ${MAX_WINDOW_DAYS} days`);
  const previousFrom = new Date(from.getTime() - length);
  if (previousFrom < STORABLE_TIMES.from || to > STORABLE_TIMES.to)
    throw invalidWindow('the window and the one before it must lie between 1900 and 2299');
  return { current: { from, to }, previous: { from: previousFrom, to: from } };
}

function toEntry<K extends string>(fields: readonly K[], row: Record<string, unknown> | undefined): Record<K, number> {
  return Object.fromEntries(fields.map((field) => [field, Number(row?.[field] ?? 0)])) as Record<K, number>;
}

const isCurrent = (row: Record<string, unknown>) => row.is_current === true || row.is_current === 1;

// Agent names sort by their bytes (code points), as ClickHouse and Postgres' C collation would.
const byCodePoints = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));

/** Windows without the runs past the project's retention (contract §3): those are never counted. */
const retained = (windows: ReportWindows, start: Date): ReportWindows => ({
  previous: retainedPart(windows.previous, start),
  current: retainedPart(windows.current, start),
});

/**
 * `rawMaxRuns`: a report whose windows hold at most this many runs (by the project's recent rate, run-rate.ts) reads
 * raw rows, however long its windows; 0 picks by the windows' length alone.
 */
export function reportService(
  ch: ClickHouseStore,
  clock: Clock,
  limits: QueryLimits,
  retainedFrom: RetainedFrom,
  rawMaxRuns: number,
) {
  const query = reportQuery(ch, limits);
  const runsPerHour = runRates(query, clock);

  /**
   * Raw rows for short windows, for windows of few runs, and for a filter the rollups do not hold (a user); else
   * the rollups. `rawRuns`: how many runs the report reads raw rather than by the rollups.
   */
  async function shapeOf(
    projectId: string,
    windows: ReportWindows,
    used: readonly q.SummaryFilter[],
    rawRuns = rawMaxRuns,
  ): Promise<ReportShape> {
    if (used.some((filter) => q.RAW_ONLY_FILTERS.includes(filter))) return 'raw';
    const byLength = reportShape(windows.previous, windows.current);
    if (byLength === 'raw' || rawRuns === 0) return byLength;
    const hours = (windows.current.to.getTime() - windows.previous.from.getTime()) / HOUR_MS;
    return (await runsPerHour(projectId)) * hours <= rawRuns ? 'raw' : 'rollups';
  }

  /** The summary's rows, one per window with runs, of the measures asked for. */
  async function summaryRows(
    name: string,
    projectId: string,
    windows: ReportWindows,
    measures: readonly Measure[],
    filters: ReportFilters,
  ) {
    const used = usedFilters(filters);
    return readMeasures(query, {
      name,
      keys: { is_current: q.GROUP_KEYS.is_current },
      measures,
      grain: 'day',
      filters: used,
      shape: await shapeOf(projectId, windows, used),
      params: { ...windowParams(projectId, windows, clock.now()), ...filterParams(filters) },
    });
  }

  return {
    windows: (sent: { from?: Date; to?: Date }) => resolveWindows(sent, clock.now()),

    async summary(
      projectId: string,
      windows: ReportWindows,
      filters: ReportFilters = {},
    ): Promise<{ current: SummaryEntry; previous: SummaryEntry }> {
      const rows = await summaryRows(
        'reports.summary',
        projectId,
        retained(windows, await retainedFrom(projectId)),
        q.SUMMARY_MEASURES,
        filters,
      );
      return {
        current: toEntry(q.SUMMARY_MEASURES, rows.find(isCurrent)),
        previous: toEntry(
          q.SUMMARY_MEASURES,
          rows.find((row) => !isCurrent(row)),
        ),
      };
    },

    /**
     * Measures over one window, by the summary's query over that window alone: each equals
     * the summary's field to the last bit, and only the partials they need are read (the alert preview's signal).
     */
    async windowMeasures<M extends Measure>(
      projectId: string,
      window: TimeRange,
      measures: readonly M[],
      filters: ReportFilters = {},
    ): Promise<Record<M, number>> {
      const rows = await summaryRows(
        'reports.window_measures',
        projectId,
        retained(alone(window), await retainedFrom(projectId)),
        measures,
        filters,
      );
      return toEntry(measures, rows.find(isCurrent));
    },

    /**
     * The window in UTC-aligned buckets (contract §9): every bucket that overlaps it, empty ones with zeros. `auto`
     * is the smallest unit that gives at most 200 buckets.
     */
    async timeseries(
      projectId: string,
      window: TimeRange,
      bucket: q.BucketUnit | 'auto',
      filters: ReportFilters = {},
    ): Promise<{ bucket: q.BucketUnit; buckets: TimeseriesBucket[] }> {
      const unit =
        bucket !== 'auto'
          ? bucket
          : ((['minute', 'hour', 'day'] as const).find(
              (candidate) => bucketCount(window, candidate) <= AUTO_MAX_BUCKETS,
            ) ?? 'day');
      const starts = bucketStarts(window, unit);
      // The summary's query parts, over this window alone; buckets past retention stay, empty.
      const windows = retained(alone(window), await retainedFrom(projectId));
      const used = usedFilters(filters);
      const rows = await readMeasures(query, {
        name: 'reports.timeseries',
        keys: q.timeseriesKeys(unit),
        measures: q.TIMESERIES_MEASURES,
        grain: unit === 'day' ? 'day' : 'hour',
        filters: used,
        // Rollups hold whole hours: minute buckets always read raw rows.
        // The rollups read both percentile steps per bucket here: raw rows pay off up to several times the runs.
        shape: unit === 'minute' ? 'raw' : await shapeOf(projectId, windows, used, TIMESERIES_RAW_FACTOR * rawMaxRuns),
        params: { ...windowParams(projectId, windows, clock.now()), ...filterParams(filters) },
      });
      const byStart = new Map(rows.map((row) => [Number(row.bucket_start), row]));
      return {
        bucket: unit,
        buckets: starts.map((start) => ({
          start: new Date(start).toISOString(),
          ...toEntry(q.TIMESERIES_MEASURES, byStart.get(start)),
        })),
      };
    },

    /** One entry per agent with runs in either window, by total_runs descending, then agent_name. */
    async health(projectId: string, sent: ReportWindows, filters: ReportFilters = {}): Promise<HealthEntry[]> {
      const windows = retained(sent, await retainedFrom(projectId));
      const used = usedFilters({ user_id: filters.user_id });
      const rows = await query<
        Record<string, unknown> & { agent_name: string; is_current: unknown; total_runs: number }
      >('reports.health', q.selectHealth(await shapeOf(projectId, windows, used), used), {
        ...windowParams(projectId, windows, clock.now()),
        ...filterParams({ user_id: filters.user_id }),
      });
      const byAgent = new Map<string, HealthEntry>();
      for (const row of rows) {
        const entry = byAgent.get(row.agent_name) ?? {
          agent_name: row.agent_name,
          prev_total_runs: 0,
          ...toEntry(q.HEALTH_MEASURES, undefined),
        };
        if (isCurrent(row)) Object.assign(entry, toEntry(q.HEALTH_MEASURES, row));
        else entry.prev_total_runs = Number(row.total_runs);
        byAgent.set(row.agent_name, entry);
      }
      return [...byAgent.values()].sort(
        (a, b) => b.total_runs - a.total_runs || byCodePoints(a.agent_name, b.agent_name),
      );
    },

    /** A page of the runs of the current window, newest first, and how many runs match in all. */
    async listRuns(projectId: string, sent: TimeRange, page: Page, filters: RunFilterValues) {
      return readRunPage(
        query,
        projectId,
        retainedPart(sent, await retainedFrom(projectId)),
        page,
        filters,
        clock.now(),
      );
    },

    /**
     * The runs of the current window that match, streamed in a format of ClickHouse's. An export takes as long as
     * its size: it has the reports' memory limit but no time limit (a client that goes away cancels it).
     */
    async exportRuns(projectId: string, sent: TimeRange, request: ExportRequest) {
      const window = retainedPart(sent, await retainedFrom(projectId));
      return streamExport(ch, query, { ...limits, maxExecutionSeconds: 0 }, projectId, window, request, clock.now());
    },
  };
}
