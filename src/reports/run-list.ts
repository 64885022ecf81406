// The run list (contract §5): a page of the runs of a window, newest first, and how many match in all.
//
// A page reads what it returns, not the window. First, how many runs match per hour, newest first: the whole hours
// from the `run_counts` projection (one row per hour, agent, status and loop flag), the partial hours at the
// window's edges and the running runs from rows. That gives X-Total-Count, and the few hours the page's runs lie in.
// Then the keys of the page, read from those hours alone; then the page's whole rows. The pages within the newest
// 1,000 runs need no hours: without filters their keys are the newest of the window, read beside the counts; with
// filters they are looked for in the window's newest hours beside the counts (a rare value would read much of the
// window for its keys), and wait for the counts' hours only when those hold fewer runs than the page. A page found so
// needs only the total, which filters without a projection count for less than their hours (selectFinishedTotal).
import { HOUR_MS } from '../clock';
import { fromClickHouseTime, toClickHouseTime } from '../db/clickhouse';
import type { Run } from '../runs/model';
import { EITHER_TABLE_SELECT, storedRun, toRun, type FinishedRunRow, type RunningRunRow } from '../runs/tables';
import type { RunQuery } from './durations';
import { fromProjection, hourWindowParams, inWindowHours, outsideWindowHours, settledHours } from './rollups';
import {
  countedByRows,
  filterParams,
  runFilters,
  usedFilters,
  type RunFilter,
  type RunFilterValues,
} from './run-filters';
import { sql } from './sql';
import { IN_WINDOW, LIVE_NOT_FINISHED, NO_PROJECTION_LOOKUP, RAW_ONLY, type TimeRange } from './window-runs';

const HOUR = 'toStartOfHour(timestamp)';

/** The smallest projection that counts runs by the filters' columns (schema/clickhouse/0002, 0005). */
const countingProjection = (filters: readonly RunFilter[]) => {
  if (filters.length === 0) return 'hourly_all_agents';
  return filters.every((filter) => filter === 'agent_name') ? 'hourly' : 'run_counts';
};

/** The whole hours [hours_start, hours_end) counted by the smallest projection whose keys are the filters' columns. */
const projectionHourCounts = (filters: readonly RunFilter[]) => sql`
  SELECT * FROM (
    SELECT ${HOUR} AS hour, count() AS runs
    FROM runs
    WHERE project_id = {project_id:UUID} AND ${inWindowHours(HOUR)}${runFilters(filters, 'finished')}
    GROUP BY hour
    ${fromProjection(countingProjection(filters))})
  UNION ALL`;

/**
 * How many finished runs of the window [window_start, window_end) match, per hour. The whole hours
 * [hours_start, hours_end) are counted by a projection, named in the read, unless a filter has no key there
 * (countedByRows: then they are counted from rows, by selectWholeHourCountsByRows or, with `q`, here as an empty
 * range of hours, and the projection's read is left out, whose filters would be planned and their subqueries run all
 * the same: a rare `q`'s count at 10 M runs, 596 → 416 ms); the rest from rows. Projections cannot answer the raw
 * side: it is planned without looking for them (NO_PROJECTION_LOOKUP).
 */
export const selectFinishedHourCounts = (filters: readonly RunFilter[]) => sql`
  SELECT hour, sum(runs) AS runs
  FROM (
    ${countedByRows(filters) ? '' : projectionHourCounts(filters)}
    SELECT ${HOUR} AS hour, count() AS runs
    FROM (
      SELECT timestamp
      FROM runs
      WHERE ${IN_WINDOW} AND ${outsideWindowHours('timestamp')}${runFilters(filters, 'finished')}
      ${NO_PROJECTION_LOOKUP})
    GROUP BY hour)
  GROUP BY hour`;

/**
 * How many finished runs of the window's whole hours [hours_start, hours_end) match, per hour, counted from rows: for
 * filters `run_counts` has no key for. A statement of its own, over hours of the past: read again, while the data parts
 * of those hours stay the same, it is answered from memory (src/db/settled-reads.ts), so the next page of a search,
 * or the same search again, reads only the window's edges and its running runs.
 */
export const selectWholeHourCountsByRows = (filters: readonly RunFilter[]) => sql`
  SELECT ${HOUR} AS hour, count() AS runs
  FROM runs
  WHERE project_id = {project_id:UUID} AND ${inWindowHours('timestamp')}${runFilters(filters, 'finished')}
  GROUP BY hour
  ${RAW_ONLY}`;

/**
 * How many running runs of the window match, per hour: a statement of its own, read beside the finished runs' counts
 * (its anti-join is the longest part of the counts: in one statement with them, the first page's counts at 100 M runs
 * took p50 30–33 ms, in two at once 24–26).
 */
export const selectLiveHourCounts = (filters: readonly RunFilter[]) => sql`
  SELECT ${HOUR} AS hour, count() AS runs
  FROM live_runs FINAL
  WHERE ${LIVE_NOT_FINISHED}${runFilters(filters, 'live')}
  GROUP BY hour
  ${RAW_ONLY}`;

/**
 * How many finished runs of the window match, in all, reading the filters' columns alone: the window's granules are
 * chosen by the primary key (indexHint: its condition selects granules and filters no row), and the rows of those
 * granules outside the window, which only the granules at its ends hold, are counted apart and taken off (their
 * granules chosen by both conditions). Reading project_id and timestamp for every row was most of a count by rows: at
 * 10 M runs, 30 days filtered by cost and duration 102 → 60–75 ms, by a tag and a tool 65–78 → 39–41 (BENCHMARKS.md).
 */
export const selectFinishedTotal = (filters: readonly RunFilter[]) => sql`
  SELECT
    (SELECT count() FROM runs
     WHERE indexHint(${IN_WINDOW})${runFilters(filters, 'finished')})
    - (SELECT count() FROM runs
       WHERE indexHint(${IN_WINDOW})${runFilters(filters, 'finished')}
         AND NOT (${IN_WINDOW})) AS runs
  ${RAW_ONLY}`;

// Ids sort by their canonical string form (ClickHouse orders UUID values differently).
const RUN_ORDER = 'timestamp DESC, run_id DESC';
const IN_PAGE_HOURS = `${HOUR} IN {hours:Array(DateTime('UTC'))}`;

/**
 * The newest `count` keys of each side that match: running runs by `live` over `live_runs FINAL`, finished ones by
 * `finished` over `runs`. The finished side is read in primary-key order and stops after `count` keys (WITH TIES
 * keeps every run sharing the last start time, which the ids then order).
 */
const newestOfEachSide = (live: string, finished: string, count: string) => sql`
    SELECT timestamp, toString(id) AS run_id, true AS live
    FROM live_runs FINAL
    WHERE ${live}
    ORDER BY ${RUN_ORDER} LIMIT ${count}
    UNION ALL
    SELECT timestamp, toString(id) AS run_id, false AS live
    FROM runs
    WHERE ${finished}
    ORDER BY timestamp DESC LIMIT ${count} WITH TIES`;

/**
 * The keys of a page's runs, newest first: the runs at [offset, offset + limit) of those that match in
 * [window_start, window_end) and in the page's hours {hours:Array(…)}, from each side's first offset + limit.
 * Read-in-order buffering is off: with a LIMIT it reads far ahead of the few granules a page needs.
 */
export const selectPageKeys = (filters: readonly RunFilter[]) => sql`
  SELECT timestamp, run_id AS id, live
  FROM (
    ${newestOfEachSide(
      `${LIVE_NOT_FINISHED} AND ${IN_PAGE_HOURS}${runFilters(filters, 'live')}`,
      `${IN_WINDOW} AND ${IN_PAGE_HOURS}${runFilters(filters, 'finished')}`,
      '{page_end:UInt64}',
    )}
  )
  ORDER BY ${RUN_ORDER}
  LIMIT {limit:UInt64} OFFSET {offset:UInt64}
  ${RAW_ONLY}, read_in_order_use_buffering = 0`;

/**
 * The keys of the runs at [offset, offset + limit) of the window's newest that match filters both rows of a run match
 * alike (SHARED_FILTERS), for a page read beside the counts. The running side skips LIVE_NOT_FINISHED's anti-join
 * (two thirds of this read's cost): a run between its finished row and its tombstone is on both sides, and is kept
 * once, as finished (`live` false sorts first). Each side's newest {page_end} hold the newest of their union, so the
 * page is exact.
 */
export const selectNewestKeys = (filters: readonly RunFilter[]) => sql`
  SELECT timestamp, run_id AS id, live
  FROM (
    ${newestOfEachSide(
      `${IN_WINDOW}${runFilters(filters, 'live')}`,
      `${IN_WINDOW}${runFilters(filters, 'finished')}`,
      '{page_end:UInt64}',
    )}
  )
  ORDER BY ${RUN_ORDER}, live
  LIMIT 1 BY timestamp, run_id
  LIMIT {limit:UInt64} OFFSET {offset:UInt64}
  ${RAW_ONLY}, read_in_order_use_buffering = 0`;

/**
 * Filters a run's finished row and its live row match alike (its agent is the same on both), so that the newest keys
 * need no anti-join. Others can tell the two apart (a `running` status, a cost or a tool that came with the finish).
 */
const SHARED_FILTERS: readonly RunFilter[] = ['agent_name'];

/** A side's page rows, through the primary key (the time range of its keys) and its ids. */
const pageRange = (side: 'finished' | 'live') => sql`
  project_id = {project_id:UUID}
    AND timestamp >= {${side}_first:DateTime64(3, 'UTC')} AND timestamp <= {${side}_last:DateTime64(3, 'UTC')}
    AND id IN {${side}_ids:Array(UUID)}`;

/** Each side's whole rows of a page, in the one shape of runs/tables.ts: finished runs, and running ones. */
const PAGE_ROWS = {
  finished: sql`
    SELECT ${EITHER_TABLE_SELECT.runs}
    FROM runs
    WHERE ${pageRange('finished')}`,
  live: sql`
    SELECT ${EITHER_TABLE_SELECT.live_runs}
    FROM live_runs FINAL
    WHERE ${pageRange('live')}`,
};

/** The whole rows of a page's keys, in one statement, of only the sides the page has. */
export const selectPageRows = (sides: readonly (keyof typeof PAGE_ROWS)[]) =>
  sides.map((side) => PAGE_ROWS[side]).join('\nUNION ALL\n');

export interface Page {
  limit: number;
  offset: number;
}

/** How many runs match in an hour (its start, as ClickHouse writes it). */
export type HourCount = { hour: string; runs: number };
/** A key of a page: a finished or a running run's. */
type PageKey = { timestamp: string; id: string; live: boolean | number };
/** A page's row: a finished run, or a running one with placeholders for the finished columns. */
type PageRow = FinishedRunRow | RunningRunRow;

const isLive = (key: PageKey) => key.live === true || key.live === 1;
const keyOf = (row: { timestamp: string; id: string }) => `${row.timestamp}|${row.id}`;

/** The counts of each hour added up, newest hour first. */
function sumByHour(counts: readonly HourCount[]): HourCount[] {
  const byHour = new Map<string, number>();
  for (const { hour, runs } of counts) byHour.set(hour, (byHour.get(hour) ?? 0) + Number(runs));
  return [...byHour].sort(([a], [b]) => (a < b ? 1 : a > b ? -1 : 0)).map(([hour, runs]) => ({ hour, runs }));
}

/**
 * The hours that hold runs [offset, offset + limit) of the counts (newest first), and how many runs the hours
 * before them hold: the page's runs are then [offset − skipped, …) of those hours' runs.
 */
export function pageHours(counts: readonly HourCount[], { offset, limit }: Page) {
  const hours: string[] = [];
  let before = 0;
  let skipped = 0;
  for (const { hour, runs } of counts) {
    if (before >= offset + limit) break;
    if (before + runs > offset) {
      if (hours.length === 0) skipped = before;
      hours.push(hour);
    }
    before += runs;
  }
  return { hours, skipped };
}

/**
 * Whether the whole hours of a list counted from rows are a statement of their own (selectWholeHourCountsByRows). Not
 * with `q`: each statement would search the window's text for its matches (Q_MATCHES), twice the work of one.
 */
const wholeHoursApart = (used: readonly RunFilter[]) => countedByRows(used) && !used.includes('q');

/**
 * The parameters of the list's statements: the window, its whole hours (an empty range at its end with `q`, whose
 * count reads every hour from rows in one statement), the filters.
 */
function listParams(projectId: string, window: TimeRange, filters: RunFilterValues, now: Date) {
  const used = usedFilters(filters);
  const byRows = used.includes('q');
  return { used, params: { ...hourWindowParams(projectId, window, now, byRows), ...filterParams(filters, used) } };
}

/**
 * How many runs of the window match the filters, per hour, newest hour first (the finished runs' and the running
 * runs' counts, read at once and added up), and in all.
 */
export async function readHourCounts(
  query: RunQuery,
  projectId: string,
  window: TimeRange,
  filters: RunFilterValues,
  now: Date,
): Promise<{ counts: HourCount[]; total: number }> {
  const { used, params } = listParams(projectId, window, filters, now);
  const wholeHours = wholeHoursApart(used) ? settledHours(params) : undefined;
  const counts = sumByHour(
    (
      await Promise.all([
        query<HourCount>('reports.runs_per_hour', selectFinishedHourCounts(used), params),
        query<HourCount>('reports.running_runs_per_hour', selectLiveHourCounts(used), params),
        wholeHours
          ? query<HourCount>('reports.runs_per_whole_hour', selectWholeHourCountsByRows(used), params, wholeHours)
          : [],
      ])
    ).flat(),
  );
  return { counts, total: counts.reduce((sum, { runs }) => sum + runs, 0) };
}

/**
 * How many runs of the window match filters that need their hours counted from rows, in all: the finished runs'
 * total (selectFinishedTotal) and the running runs', read at once: what a page found among the newest runs needs.
 */
async function readTotal(query: RunQuery, used: readonly RunFilter[], params: Record<string, unknown>) {
  const [finished, running] = await Promise.all([
    query<{ runs: number }>('reports.runs_total', selectFinishedTotal(used), params),
    query<HourCount>('reports.running_runs_per_hour', selectLiveHourCounts(used), params),
  ]);
  return [...finished, ...running].reduce((sum, { runs }) => sum + Number(runs), 0);
}

/** A page of the runs of a window that match the filters, newest first, and how many match in all. */
export async function readRunPage(
  query: RunQuery,
  projectId: string,
  window: TimeRange,
  page: Page,
  filters: RunFilterValues,
  now: Date,
): Promise<{ runs: Run[]; total: number }> {
  const { used, params } = listParams(projectId, window, filters, now);
  const readCounts = () => readHourCounts(query, projectId, window, filters, now);
  const lookNewest = page.offset + page.limit <= NEWEST_LOOK_RUNS && looksNewestFirst(used);
  // A page found among the newest runs needs the total alone, which costs less than the hours' counts when those
  // are read from rows; the hours are counted only if the page is not found there.
  const counting = lookNewest && countedByRows(used) ? undefined : readCounts();
  if (lookNewest) {
    const [total, newestPage] = await Promise.all([
      counting ? counting.then((counted) => counted.total) : readTotal(query, used, params),
      readNewestPage(query, projectId, window, page, used, params),
    ]);
    if (newestPage) return { runs: newestPage, total };
  }
  const { counts, total } = await (counting ?? readCounts());
  const { hours: onPage, skipped } = pageHours(counts, page);
  if (onPage.length === 0) return { runs: [], total };
  // The page's hours, within the window: its keys are read there alone.
  const newest = fromClickHouseTime(onPage[0]).getTime() + HOUR_MS;
  const oldest = fromClickHouseTime(onPage.at(-1)!).getTime();
  const keys = await query<PageKey>('reports.runs_page_keys', selectPageKeys(used), {
    ...params,
    window_start: toClickHouseTime(new Date(Math.max(oldest, window.from.getTime()))),
    window_end: toClickHouseTime(new Date(Math.min(newest, window.to.getTime()))),
    hours: onPage,
    limit: page.limit,
    offset: page.offset - skipped,
    page_end: page.offset - skipped + page.limit,
  });
  return { runs: await readPageRows(query, projectId, keys), total };
}

/**
 * How deep into the list a page is looked for among the newest runs (readNewestPage): the pages a reader turns to
 * from the first. The look reads the keys of every run before the page's, as many as the largest page holds.
 */
const NEWEST_LOOK_RUNS = 1000;

/**
 * Whether a filtered page looks for its runs in the window's newest hours beside the counts. Not with `q`, whose
 * every statement searches the window's text, nor for one session's or one user's runs: few, so the newest hours
 * seldom hold a page of them, and the look would take one of the engine's read connections from the counts (at 100 M
 * runs, the first page filtered by session_id 105 → 129–149 ms p50 with it; BENCHMARKS.md).
 */
const looksNewestFirst = (used: readonly RunFilter[]) =>
  !used.some((filter) => filter === 'q' || filter === 'session_id' || filter === 'user_id');

/**
 * How far back from a window's end a filtered page looks for its runs while the counts are read: reading in
 * primary-key order, a common filter finds its page in the newest granules, and a rare one reads at most these hours.
 */
const NEWEST_SPAN_MS = 6 * HOUR_MS;

/** The starts of the hours that [from, to) touches, as ClickHouse reads a DateTime. */
function hourStarts(from: number, to: number): string[] {
  const hours: string[] = [];
  for (let hour = Math.floor(from / HOUR_MS) * HOUR_MS; hour < to; hour += HOUR_MS) {
    hours.push(toClickHouseTime(new Date(hour)).slice(0, 19));
  }
  return hours;
}

/**
 * A page read from the window's newest runs, beside its counts rather than after them: all of the window without
 * filters (every run matches, and the read in primary-key order stops at the page), else its newest hours alone
 * (NEWEST_SPAN_MS). When the keys found fill the page, or were looked for in the whole window, they are the page: every
 * other match started earlier. Otherwise undefined, and the page is read from the hours the counts name.
 */
async function readNewestPage(
  query: RunQuery,
  projectId: string,
  window: TimeRange,
  { limit, offset }: Page,
  used: readonly RunFilter[],
  params: Record<string, unknown>,
): Promise<Run[] | undefined> {
  const to = window.to.getTime();
  const from = used.length === 0 ? window.from.getTime() : Math.max(window.from.getTime(), to - NEWEST_SPAN_MS);
  const start = toClickHouseTime(new Date(from));
  const keys = used.every((filter) => SHARED_FILTERS.includes(filter))
    ? await query<PageKey>('reports.runs_newest_keys', selectNewestKeys(used), {
        ...params,
        window_start: start,
        limit,
        offset,
        page_end: offset + limit,
      })
    : await query<PageKey>('reports.runs_newest_page_keys', selectPageKeys(used), {
        ...params,
        window_start: start,
        hours: hourStarts(from, to),
        limit,
        offset,
        page_end: offset + limit,
      });
  return keys.length === limit || from === window.from.getTime() ? readPageRows(query, projectId, keys) : undefined;
}

/** The whole rows of a page's keys, in the keys' order. */
async function readPageRows(query: RunQuery, projectId: string, keys: readonly PageKey[]): Promise<Run[]> {
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
    (await query<PageRow>('reports.page_rows', selectPageRows(present), params)).map((row) => [keyOf(row), row]),
  );
  return keys.flatMap((key) => {
    const row = rows.get(keyOf(key));
    // A key whose row is gone by the second phase (a running run's tombstone merged away, a partition dropped
    // by the TTL) is skipped.
    return row ? [toRun(storedRun(row))] : [];
  });
}
