// The report logic (contract section 5): resolves windows, runs the report queries, shapes their rows. No HTTP here.
import type { Clock } from '../clock';
import { toClickHouseTime, type ClickHouseStore, type QueryLimits } from '../db/clickhouse';
import { AppError } from '../errors';
import { STORABLE_TIMES } from '../http/schemas';
import type { Run, RunStatus } from '../runs/model';
import { storedRun, toRun, type FinishedRunRow, type RunningRunRow } from '../runs/tables';
import type { RetainedFrom } from '../retention/cutoffs';
import * as q from './queries';
import { reportShape, wholeHourParams } from './rollups';
import type { Measure } from './signals';
import { retainedPart, type TimeRange } from './window-runs';

const DAY_MS = 86_400_000;
export const DEFAULT_WINDOW_DAYS = 30;
export const MAX_WINDOW_DAYS = 400;

/** A report's window and the one before it, of the same length: [from − (to − from), from). */
export interface ReportWindows {
  current: TimeRange;
  previous: TimeRange;
}

export type SummaryEntry = Record<(typeof q.SUMMARY_MEASURES)[number], number>;
export type HealthEntry = { agent_name: string; prev_total_runs: number } & Record<
  (typeof q.HEALTH_MEASURES)[number],
  number
>;
export type TimeseriesBucket = { start: string } & Record<(typeof q.TIMESERIES_MEASURES)[number], number>;

export interface RunFilters {
  agent_name?: string;
  status?: RunStatus;
  loop_detected?: boolean;
}
export interface Page {
  limit: number;
  offset: number;
}

const BUCKET_MS: Record<q.BucketUnit, number> = { minute: 60_000, hour: 3_600_000, day: DAY_MS };
/** `auto` takes the smallest bucket that gives at most this many; no window may ask for more than MAX_BUCKETS. */
const AUTO_MAX_BUCKETS = 200;
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

/** A window alone, in the terms of the report queries: with an empty previous window at its start. */
const alone = (window: TimeRange): ReportWindows => ({
  previous: { from: window.from, to: window.from },
  current: window,
});

// The report queries read the runs of [previous.from, current.to) and tell the two windows apart by current.from.
const windowParams = (projectId: string, windows: ReportWindows) => ({
  project_id: projectId,
  window_start: toClickHouseTime(windows.previous.from),
  window_end: toClickHouseTime(windows.current.to),
  current_start: toClickHouseTime(windows.current.from),
  ...wholeHourParams(windows.previous, windows.current),
});

function toEntry<K extends string>(fields: readonly K[], row: Record<string, unknown> | undefined): Record<K, number> {
  return Object.fromEntries(fields.map((field) => [field, Number(row?.[field] ?? 0)])) as Record<K, number>;
}

const isCurrent = (row: { is_current: unknown }) => row.is_current === true || row.is_current === 1;

// Agent names sort by their bytes (code points), as ClickHouse and Postgres' C collation would.
const byCodePoints = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));

/** A key of a page's first phase: a finished or a running run's, with the number of runs that match. */
type PageKey = { timestamp: string; id: string; live: boolean | number; total: number };
/** A row of a page's second phase: a finished run, or a running one with placeholders for the finished columns. */
type PageRow = FinishedRunRow | RunningRunRow;
const isLive = (key: PageKey) => key.live === true || key.live === 1;
const keyOf = (row: { timestamp: string; id: string }) => `${row.timestamp}|${row.id}`;

/** Windows without the runs past the project's retention (contract §3): those are never counted. */
const retained = (windows: ReportWindows, start: Date): ReportWindows => ({
  previous: retainedPart(windows.previous, start),
  current: retainedPart(windows.current, start),
});

export function reportService(ch: ClickHouseStore, clock: Clock, limits: QueryLimits, retainedFrom: RetainedFrom) {
  const query = <Row>(name: string, sql: string, params: Record<string, unknown>) =>
    ch.query<Row>({ name, sql, params, limits });

  /** Phase two of a page: the whole rows of its keys, in the keys' order. */
  async function readPageRows(projectId: string, keys: readonly PageKey[]): Promise<Run[]> {
    const sides = { finished: keys.filter((key) => !isLive(key)), live: keys.filter(isLive) };
    const present = (['finished', 'live'] as const).filter((side) => sides[side].length > 0);
    if (present.length === 0) return [];
    const params: Record<string, unknown> = { project_id: projectId };
    for (const side of present) {
      // Keys are newest first.
      Object.assign(params, {
        [`${side}_first`]: sides[side].at(-1)!.timestamp,
        [`${side}_last`]: sides[side][0].timestamp,
        [`${side}_ids`]: sides[side].map((key) => key.id),
      });
    }
    const rows = new Map(
      (await query<PageRow>('reports.page_rows', q.selectPageRows(present), params)).map((row) => [keyOf(row), row]),
    );
    return keys.flatMap((key) => {
      const row = rows.get(keyOf(key));
      // A key whose row is gone by the second phase (a running run's tombstone merged away, a partition dropped
      // by the TTL) is skipped.
      return row ? [toRun(storedRun(row))] : [];
    });
  }

  /** The summary query's rows, one per window with runs, of the measures asked for. */
  function summaryRows(
    name: string,
    projectId: string,
    windows: ReportWindows,
    measures: readonly Measure[],
    agentName?: string,
  ) {
    const filters: q.SummaryFilter[] = agentName === undefined ? [] : ['agent_name'];
    return query<Record<string, unknown> & { is_current: unknown }>(
      name,
      q.selectSummary(filters, reportShape(windows.previous, windows.current), measures),
      {
        ...windowParams(projectId, windows),
        ...(agentName === undefined ? {} : { agent_name: agentName }),
      },
    );
  }

  return {
    windows: (sent: { from?: Date; to?: Date }) => resolveWindows(sent, clock.now()),

    async summary(
      projectId: string,
      windows: ReportWindows,
      agentName?: string,
    ): Promise<{ current: SummaryEntry; previous: SummaryEntry }> {
      const rows = await summaryRows(
        'reports.summary',
        projectId,
        retained(windows, await retainedFrom(projectId)),
        q.SUMMARY_MEASURES,
        agentName,
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
      agentName?: string,
    ): Promise<Record<M, number>> {
      const rows = await summaryRows(
        'reports.window_measures',
        projectId,
        retained(alone(window), await retainedFrom(projectId)),
        measures,
        agentName,
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
      agentName?: string,
    ): Promise<{ bucket: q.BucketUnit; buckets: TimeseriesBucket[] }> {
      const unit =
        bucket !== 'auto'
          ? bucket
          : ((['minute', 'hour', 'day'] as const).find(
              (candidate) => bucketCount(window, candidate) <= AUTO_MAX_BUCKETS,
            ) ?? 'day');
      const starts = bucketStarts(window, unit);
      const filters: q.SummaryFilter[] = agentName === undefined ? [] : ['agent_name'];
      // The summary's query parts, over this window alone; buckets past retention stay, empty.
      const windows = retained(alone(window), await retainedFrom(projectId));
      // Rollups hold whole hours: minute buckets always read raw rows.
      const shape = unit === 'minute' ? 'raw' : reportShape(windows.previous, windows.current);
      const rows = await query<Record<string, unknown> & { bucket_start: number | string }>(
        'reports.timeseries',
        q.selectTimeseries(filters, unit, shape),
        {
          ...windowParams(projectId, windows),
          ...(agentName === undefined ? {} : { agent_name: agentName }),
        },
      );
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
    async health(projectId: string, sent: ReportWindows): Promise<HealthEntry[]> {
      const windows = retained(sent, await retainedFrom(projectId));
      const rows = await query<
        Record<string, unknown> & { agent_name: string; is_current: unknown; total_runs: number }
      >(
        'reports.health',
        q.selectHealth(reportShape(windows.previous, windows.current)),
        windowParams(projectId, windows),
      );
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
    async listRuns(
      projectId: string,
      sent: TimeRange,
      page: Page,
      filters: RunFilters,
    ): Promise<{ runs: Run[]; total: number }> {
      const window = retainedPart(sent, await retainedFrom(projectId));
      const used = (Object.keys(q.RUN_FILTERS) as q.RunFilter[]).filter((filter) => filters[filter] !== undefined);
      const params = {
        project_id: projectId,
        window_start: toClickHouseTime(window.from),
        window_end: toClickHouseTime(window.to),
        ...Object.fromEntries(used.map((filter) => [filter, filters[filter]])),
      };
      const keys = await query<PageKey>('reports.runs_page_keys', q.selectPageKeys(used), {
        ...params,
        limit: page.limit,
        offset: page.offset,
        page_end: page.offset + page.limit,
      });
      // Each key carries the total; a page past the last run has none to carry it.
      const total =
        keys.length > 0
          ? keys[0].total
          : (await query<{ total: number }>('reports.runs_count', q.countRuns(used), params))[0].total;
      return { runs: await readPageRows(projectId, keys), total: Number(total) };
    },
  };
}
