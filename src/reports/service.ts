// The report logic (contract section 5): resolves windows, runs the report queries, shapes their rows. No HTTP here.
import type { Clock } from '../clock';
import { toClickHouseTime, type ClickHouseStore, type QueryLimits } from '../db/clickhouse';
import { AppError } from '../http/errors';
import { toRun, type FinishedRunRow, type Run, type RunColumns, type RunStatus } from '../runs/model';
import * as q from './queries';
import { reportShape, wholeHourParams } from './rollups';

const DAY_MS = 86_400_000;
export const DEFAULT_WINDOW_DAYS = 30;
export const MAX_WINDOW_DAYS = 400;
// The range of ClickHouse's DateTime64.
const EARLIEST = new Date('1900-01-01T00:00:00Z');
const LATEST = new Date('2300-01-01T00:00:00Z');

export interface TimeRange {
  from: Date;
  to: Date;
}
/** A report's window and the one before it, of the same length: [from − (to − from), from). */
export interface ReportWindows {
  current: TimeRange;
  previous: TimeRange;
}

export type SummaryEntry = Record<(typeof q.SUMMARY_MEASURES)[number], number>;
export type HealthEntry = { agent_name: string; prev_total_runs: number } & Record<(typeof q.HEALTH_MEASURES)[number], number>;

export interface RunFilters {
  agent_name?: string;
  status?: RunStatus;
  loop_detected?: boolean;
}
export interface Page {
  limit: number;
  offset: number;
}

const invalidWindow = (message: string) => new AppError(400, 'invalid_window', message);

/** from/to as sent, with the contract's defaults (now − 30 days, now); "now" is the service's clock. */
export function resolveWindows(sent: { from?: Date; to?: Date }, now: Date): ReportWindows {
  const from = sent.from ?? new Date(now.getTime() - DEFAULT_WINDOW_DAYS * DAY_MS);
  const to = sent.to ?? now;
  const length = to.getTime() - from.getTime();
  if (length <= 0) throw invalidWindow('from must be before to');
  if (length > MAX_WINDOW_DAYS * DAY_MS) throw invalidWindow(`the window must be at most ${MAX_WINDOW_DAYS} days`);
  const previousFrom = new Date(from.getTime() - length);
  if (previousFrom < EARLIEST || to > LATEST) throw invalidWindow('the window and the one before it must lie between 1900 and 2299');
  return { current: { from, to }, previous: { from: previousFrom, to: from } };
}

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
type PageRow = FinishedRunRow | (Omit<FinishedRunRow, 'status'> & { status: 'running' });
const isLive = (key: PageKey) => key.live === true || key.live === 1;
const keyOf = (row: { timestamp: string; id: string }) => `${row.timestamp}|${row.id}`;

/** A page row as stored: a running run's without the placeholders. */
function storedRow(row: PageRow): FinishedRunRow | RunColumns {
  if (row.status !== 'running') return row;
  const { status: _status, finished_at: _finishedAt, duration_ms: _duration, output: _output, termination_reason: _reason, termination_detail: _detail, ...live } = row;
  return live;
}

export function reportService(ch: ClickHouseStore, clock: Clock, limits: QueryLimits) {
  const query = <Row>(name: string, sql: string, params: Record<string, unknown>) => ch.query<Row>({ name, sql, params, limits });

  /** Phase two of a page: the whole rows of its keys, in the keys' order. */
  async function readPageRows(projectId: string, keys: readonly PageKey[]): Promise<Run[]> {
    const sides = { finished: keys.filter((key) => !isLive(key)), live: keys.filter(isLive) };
    const present = (['finished', 'live'] as const).filter((side) => sides[side].length > 0);
    if (present.length === 0) return [];
    const params: Record<string, unknown> = { project_id: projectId };
    for (const side of present) {
      // Keys are newest first.
      Object.assign(params, { [`${side}_first`]: sides[side].at(-1)!.timestamp, [`${side}_last`]: sides[side][0].timestamp, [`${side}_ids`]: sides[side].map((key) => key.id) });
    }
    const rows = new Map((await query<PageRow>('reports.page_rows', q.selectPageRows(present), params)).map((row) => [keyOf(row), row]));
    return keys.flatMap((key) => {
      const row = rows.get(keyOf(key));
      // A key whose row is gone by the second phase (a running run's tombstone merged away, a partition dropped
      // by the TTL) is skipped.
      return row ? [toRun(storedRow(row))] : [];
    });
  }

  return {
    windows: (sent: { from?: Date; to?: Date }) => resolveWindows(sent, clock.now()),

    async summary(projectId: string, windows: ReportWindows, agentName?: string): Promise<{ current: SummaryEntry; previous: SummaryEntry }> {
      const filters: q.SummaryFilter[] = agentName === undefined ? [] : ['agent_name'];
      const rows = await query<Record<string, unknown> & { is_current: unknown }>('reports.summary', q.selectSummary(filters, reportShape(windows.previous, windows.current)), {
        ...windowParams(projectId, windows),
        ...(agentName === undefined ? {} : { agent_name: agentName }),
      });
      return {
        current: toEntry(q.SUMMARY_MEASURES, rows.find(isCurrent)),
        previous: toEntry(q.SUMMARY_MEASURES, rows.find((row) => !isCurrent(row))),
      };
    },

    /** One entry per agent with runs in either window, by total_runs descending, then agent_name. */
    async health(projectId: string, windows: ReportWindows): Promise<HealthEntry[]> {
      const rows = await query<Record<string, unknown> & { agent_name: string; is_current: unknown; total_runs: number }>(
        'reports.health', q.selectHealth(reportShape(windows.previous, windows.current)), windowParams(projectId, windows),
      );
      const byAgent = new Map<string, HealthEntry>();
      for (const row of rows) {
        const entry = byAgent.get(row.agent_name) ?? { agent_name: row.agent_name, prev_total_runs: 0, ...toEntry(q.HEALTH_MEASURES, undefined) };
        if (isCurrent(row)) Object.assign(entry, toEntry(q.HEALTH_MEASURES, row));
        else entry.prev_total_runs = Number(row.total_runs);
        byAgent.set(row.agent_name, entry);
      }
      return [...byAgent.values()].sort((a, b) => b.total_runs - a.total_runs || byCodePoints(a.agent_name, b.agent_name));
    },

    /** A page of the runs of the current window, newest first, and how many runs match in all. */
    async listRuns(projectId: string, window: TimeRange, page: Page, filters: RunFilters): Promise<{ runs: Run[]; total: number }> {
      const used = (Object.keys(q.RUN_FILTERS) as q.RunFilter[]).filter((filter) => filters[filter] !== undefined);
      const params = {
        project_id: projectId,
        window_start: toClickHouseTime(window.from),
        window_end: toClickHouseTime(window.to),
        ...Object.fromEntries(used.map((filter) => [filter, filters[filter]])),
      };
      const keys = await query<PageKey>('reports.runs_page_keys', q.selectPageKeys(used), {
        ...params, limit: page.limit, offset: page.offset, page_end: page.offset + page.limit,
      });
      // Each key carries the total; a page past the last run has none to carry it.
      const total = keys.length > 0 ? keys[0].total : (await query<{ total: number }>('reports.runs_count', q.countRuns(used), params))[0].total;
      return { runs: await readPageRows(projectId, keys), total: Number(total) };
    },
  };
}
