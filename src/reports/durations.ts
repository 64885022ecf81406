// Exact duration percentiles from the duration projections of `runs` (schema/clickhouse/0005), in two steps instead
// of one pass over every finished run of a window.
//
// A percentile is the value at a rank, or between two ranks (contract §5; ClickHouse's quantileExactInclusive).
// Step one counts the finished runs of each duration bucket per group — the daily and hourly bucket counts for the
// window's whole days and hours, raw rows for the partial hours at its edges — and finds the bucket that holds each
// rank, and the rank within it. Step two counts the runs of each distinct duration of those buckets alone (from the
// projections keyed by bucket, then time, then duration) and finds the value at each rank; each side is sent only the
// cells it had runs in at step one (a time series' raw side, two partial hours, is not sent the wanted buckets of every
// hour), and a side with none of them is not read. A 30-day window at 100 M runs reads a few hundred rows per hour in
// each step instead of every run: the cost grows with the hours and buckets of the window, not with its runs. Each
// step is a statement per side (days, hours, rows), sent side by side: a statement's cost here is mostly its
// planning, which the sides then share the cores for (docs/reports.md); their counts are added up, and the ranks
// found, here.
import { TupleParam } from '@clickhouse/client';
import type { ClickHouseStore, QueryLimits } from '../db/clickhouse';
import type { SettledRange } from '../db/settled-reads';
import { AppError } from '../errors';
import {
  AS_DAILY_ROLLUP_COLUMNS,
  AS_ROLLUP_COLUMNS,
  fromProjection,
  IN_WHOLE_DAYS,
  IN_WHOLE_HOURS,
  IN_WHOLE_HOURS_OUTSIDE_DAYS,
  OUTSIDE_WHOLE_HOURS,
  settledHours,
  settledParams,
} from './rollups';
import { andEach, sql, whereAll } from './sql';
import { finishedRunsOfWindow, RAW_ONLY } from './window-runs';

/** A key of a report's groups: its expression over the run_* columns, and its ClickHouse type. */
export interface GroupKey {
  sql: string;
  type: string;
}
export type GroupKeys = Readonly<Record<string, GroupKey>>;

export const keyNames = (keys: GroupKeys) => Object.keys(keys).join(', ');
export const keyColumns = (keys: GroupKeys) =>
  Object.entries(keys)
    .map(([name, key]) => `${key.sql} AS ${name}`)
    .join(', ');

/** Whether a read's keys or filters use the agent: then only the projections keyed by agent answer it. */
export const readsAgent = (keys: GroupKeys, filters: readonly string[]) =>
  [...Object.values(keys).map((key) => key.sql), ...filters].some((text) => text.includes('run_agent'));

/**
 * What a report's groups are made of: whole days (a window, an agent, a day bucket) or hours (hour buckets). Whole
 * days are read from the daily projections, one row per day instead of 24, when a group never splits a day.
 */
export type Grain = 'day' | 'hour';

/** What a side reads: the finished runs of each group and cell, counted by one of the sides of a window. */
interface CellRead {
  keys: GroupKeys;
  /** Columns that are part of a group here (step two: the bucket, whose durations are the cells). */
  by: readonly string[];
  /** The run_* column that is counted by value (a bucket, or a duration). */
  cell: string;
  filters: readonly string[];
  /** Conditions that narrow every side to the cells asked for. */
  only: readonly string[];
  grain: Grain;
}

/** A side's statement, and the side it reads: the whole days, the other whole hours, or the rows of the rest. */
export interface SideStatement {
  side: 'days' | 'hours' | 'rows';
  sql: string;
}

/**
 * A side's rows as one row per group: its cells in ascending order and their counts, in two arrays. The engine sorts
 * them, so that adding the sides up here is a walk over each group's arrays, not a sort of every cell.
 */
const perGroup = ({ keys, by, cell }: CellRead, counts: string) => {
  const group = [keyNames(keys), ...by].join(', ');
  return sql`
    SELECT ${group},
      arraySort(groupArray(${cell})) AS cells,
      arraySort((n, c) -> c, groupArray(runs), groupArray(${cell})) AS counts
    FROM (
      ${counts}
    )
    GROUP BY ${group}`;
};

/**
 * The statements that count, per group and cell, the finished runs that match `filters`: one per side of the window,
 * read side by side (each is planned on its own, which is most of what a side costs). The whole days from a daily
 * duration projection (with the `day` grain), the other whole hours from an hourly one (their expressions, through
 * AS_ROLLUP_COLUMNS' aliases), the partial hours from raw rows, planned without a look at the projections.
 */
function cellCountStatements(read: CellRead): SideStatement[] {
  const { keys, by, cell, filters, only, grain } = read;
  const conditions = andEach([...filters, ...only]);
  const columns = [keyColumns(keys), ...by, cell].join(', ');
  const grouping = [keyNames(keys), ...by, cell].join(', ');
  // The duration projections of schema/clickhouse/0005, by their names.
  const projection = (daily: boolean) =>
    fromProjection(
      `${daily ? 'daily_' : ''}${readsAgent(keys, filters) ? 'agent_' : ''}duration_` +
        (cell === 'run_duration_ms' ? 'values' : 'buckets'),
    );
  const fromRollup = (daily: boolean, range: string) => sql`
    SELECT * FROM (
      ${daily ? AS_DAILY_ROLLUP_COLUMNS : AS_ROLLUP_COLUMNS}
      SELECT ${columns}, count() AS runs
      FROM runs
      WHERE ${range}${conditions}
      GROUP BY ${grouping}
      ${projection(daily)})`;
  const fromRows = sql`
    SELECT ${columns}, count() AS runs
    FROM (
      ${finishedRunsOfWindow([OUTSIDE_WHOLE_HOURS])}
    ) ${whereAll([...filters, ...only])}
    GROUP BY ${grouping}`;
  return [
    ...(grain === 'day' ? [{ side: 'days' as const, sql: perGroup(read, fromRollup(true, IN_WHOLE_DAYS)) }] : []),
    {
      side: 'hours' as const,
      sql: perGroup(read, fromRollup(false, grain === 'day' ? IN_WHOLE_HOURS_OUTSIDE_DAYS : IN_WHOLE_HOURS)),
    },
    {
      side: 'rows' as const,
      sql: sql`
        ${perGroup(read, fromRows)}
        ${RAW_ONLY}`,
    },
  ];
}

/** Step one: per group, the finished runs of each duration bucket that match, by side (cellCountStatements). */
export const selectBucketCounts = (keys: GroupKeys, filters: readonly string[], grain: Grain) =>
  cellCountStatements({ keys, by: [], cell: 'run_duration_bucket', filters, only: [], grain });

/** The type of a wanted cell: its group's keys, then the bucket (DURATION_BUCKET is an Int64). */
const cellType = (keys: GroupKeys) => `Tuple(${[...Object.values(keys).map((key) => key.type), 'Int64'].join(', ')})`;

/**
 * Step two: per wanted cell (group and bucket) of {cells:Array(…)}, the finished runs of each duration, by side.
 * {buckets:Array(Int64)} is the cells' buckets, which bound the projections' primary key.
 */
export const selectDurationCounts = (keys: GroupKeys, filters: readonly string[], grain: Grain) =>
  cellCountStatements({
    keys,
    by: ['run_duration_bucket'],
    cell: 'run_duration_ms',
    filters,
    only: [
      'run_duration_bucket IN {buckets:Array(Int64)}',
      `(${keyNames(keys)}, run_duration_bucket) IN {cells:Array(${cellType(keys)})}`,
    ],
    grain,
  });

/** A row of a side: a group's keys (and bucket, in step two), its cells and their counts. */
type SideRow = Record<string, unknown> & { cells: number[]; counts: number[] };

/** A group's cells in ascending order, and the cumulative counts of its runs in the same order. */
interface Distribution {
  values: number[];
  cumulative: number[];
}

/** The first index of an ascending array whose value is at least `target` (the array's length if none is). */
function firstAtLeast(ascending: readonly number[], target: number): number {
  let [low, high] = [0, ascending.length];
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (ascending[middle] < target) low = middle + 1;
    else high = middle;
  }
  return low;
}

/** Whether a row's cells (ascending) hold a cell. */
const holds = (row: SideRow | undefined, cell: number) =>
  row !== undefined && row.cells[firstAtLeast(row.cells, cell)] === cell;

/** A group's rows (each with its cells ascending) as one distribution: one side's as they are, several merged. */
function distributionOf(rows: readonly SideRow[]): Distribution {
  const pairs =
    rows.length === 1
      ? rows[0].cells.map((cell, i) => ({ cell: Number(cell), count: Number(rows[0].counts[i]) }))
      : rows
          .flatMap((row) => row.cells.map((cell, i) => ({ cell: Number(cell), count: Number(row.counts[i]) })))
          .sort((a, b) => a.cell - b.cell);
  const values: number[] = [];
  const cumulative: number[] = [];
  let total = 0;
  for (const { cell, count } of pairs) {
    total += count;
    if (values.at(-1) === cell) {
      cumulative[cumulative.length - 1] = total;
    } else {
      values.push(cell);
      cumulative.push(total);
    }
  }
  return { values, cumulative };
}

/** A side's rows by their identity: a side answers one row per group (step one), or per group and bucket (two). */
type KeyedSide = ReadonlyMap<string, SideRow>;
const keyedBy = (rows: readonly SideRow[], identity: (row: SideRow) => string): KeyedSide =>
  new Map(rows.map((row) => [identity(row), row]));

/** The sides' rows added up per identity, each one's cells in ascending order. */
function addUp(sides: readonly KeyedSide[]) {
  const rowsOf = new Map<string, SideRow[]>();
  for (const side of sides) {
    for (const [id, row] of side) {
      const rows = rowsOf.get(id);
      if (rows) rows.push(row);
      else rowsOf.set(id, [row]);
    }
  }
  return new Map(
    [...rowsOf].map(([id, rows]) => [id, { row: rows[0] as Record<string, unknown>, ...distributionOf(rows) }]),
  );
}

/** Where a rank (1-based) lies in a distribution: the index of its cell, and its rank within that cell. */
function locate({ cumulative }: Distribution, rank: number): { at: number; within: number } {
  const at = firstAtLeast(cumulative, rank);
  return { at, within: rank - (at === 0 ? 0 : cumulative[at - 1]) };
}

/**
 * The two ranks of a level, as quantileExactInclusive takes them: h = level × (finished − 1) + 1, the lower rank ⌊h⌋
 * and the upper ⌊h⌋ + 1 (1-based; both the last when ⌊h⌋ reaches `finished`), and the fraction h − ⌊h⌋ between their
 * values. The same floating-point steps as the engine's.
 */
function ranksOf(level: number, finished: number) {
  const h = level * (finished - 1) + 1;
  const lower = Math.min(Math.trunc(h), finished);
  return { lower, upper: Math.min(lower + 1, finished), fraction: h - Math.trunc(h) };
}

/**
 * Runs a statement with its name and parameters (the report service's query, with its limits). A statement that
 * reads only the finished rows of `runs` that started in `settled` (whole hours of the past) may be answered again
 * from memory while the parts holding them stay the same (ClickHouseStore.querySettled).
 */
export type RunQuery = <Row>(
  name: string,
  sql: string,
  params: Record<string, unknown>,
  settled?: SettledRange,
) => Promise<Row[]>;

/** The RunQuery of a store, with the reports' limits. */
export const reportQuery =
  (ch: ClickHouseStore, limits: QueryLimits): RunQuery =>
  (name, sql, params, settled) =>
    settled ? ch.querySettled({ name, sql, params, limits }, settled) : ch.query({ name, sql, params, limits });

/** A group's identity in JavaScript: its key values, in the keys' order. */
export const groupIdentity = (keys: GroupKeys, row: Record<string, unknown>) =>
  JSON.stringify(Object.keys(keys).map((name) => row[name]));

/** A group's percentiles at the levels asked for, and the finished runs they are over. */
export interface GroupPercentiles {
  /** The group's keys, by name. */
  keyValues: Record<string, unknown>;
  finished: number;
  values: number[];
}

/** Where a level's value lies: the cells (group and bucket) of its two ranks, the ranks within them, the fraction. */
interface LevelPlace {
  low: { cell: string; within: number };
  high: { cell: string; within: number };
  fraction: number;
}

const cellOf = (group: string, bucket: number) => JSON.stringify([group, bucket]);

/**
 * The exact percentiles at `levels` of the finished runs of each group (keyed by groupIdentity), by the two steps:
 * a group without finished runs has no entry. `params` are the report's window parameters (rollups.ts) and its
 * filters' values. Each step's sides are read side by side. Runs deleted between the two steps (a replaced OTLP row,
 * retention) can leave step two short of a rank: the two steps are read once more, then the read is refused (503).
 */
export async function readPercentiles(
  query: RunQuery,
  keys: GroupKeys,
  filters: readonly string[],
  params: Record<string, unknown>,
  levels: readonly number[],
  grain: Grain,
): Promise<Map<string, GroupPercentiles>> {
  // The days and hours sides read the past: kept while its data parts stay the same, unless this is the read again
  // after runs were deleted between the two steps (it must then read what is stored now).
  const readSides = (
    name: string,
    statements: readonly (SideStatement & { params: Record<string, unknown> })[],
    again: boolean,
  ) =>
    Promise.all(
      statements.map(({ side, sql, params }) =>
        side === 'rows' || again
          ? query<SideRow>(`${name}.${side}`, sql, params)
          : query<SideRow>(`${name}.${side}`, sql, settledParams(params), settledHours(params)),
      ),
    );

  async function readOnce(again = false): Promise<Map<string, GroupPercentiles> | undefined> {
    const bucketStatements = selectBucketCounts(keys, filters, grain).map((statement) => ({ ...statement, params }));
    const bucketSides = (await readSides('reports.duration_buckets', bucketStatements, again)).map((rows) =>
      keyedBy(rows, (row) => groupIdentity(keys, row)),
    );
    const groups = addUp(bucketSides);
    // Per side, each group's row: step two reads a cell from the sides whose rows hold it alone.
    const rowsOfSide = new Map(bucketStatements.map(({ side }, i) => [side, bucketSides[i]]));
    // Per group, where each level lies; each cell wanted once.
    const wanted = new Map<string, { group: string; keyValues: unknown[]; bucket: number }>();
    const placed = new Map<string, { keyValues: unknown[]; finished: number; places: LevelPlace[] }>();
    for (const [group, buckets] of groups) {
      const keyValues = Object.keys(keys).map((name) => buckets.row[name]);
      const finished = buckets.cumulative[buckets.cumulative.length - 1];
      const placeOf = (rank: number) => {
        const { at, within } = locate(buckets, rank);
        const [bucket, cell] = [buckets.values[at], cellOf(group, buckets.values[at])];
        wanted.set(cell, { group, keyValues, bucket });
        return { cell, within };
      };
      const places = levels.map((level) => {
        const { lower, upper, fraction } = ranksOf(level, finished);
        return { low: placeOf(lower), high: placeOf(upper), fraction };
      });
      placed.set(group, { keyValues, finished, places });
    }
    if (placed.size === 0) return new Map();
    const valueStatements = selectDurationCounts(keys, filters, grain).flatMap((statement) => {
      const rows = rowsOfSide.get(statement.side)!;
      const cells = [...wanted.values()].filter((cell) => holds(rows.get(cell.group), cell.bucket));
      if (cells.length === 0) return [];
      const buckets = [...new Set(cells.map((cell) => cell.bucket))];
      const tuples = cells.map((cell) => new TupleParam([...cell.keyValues, cell.bucket]));
      return [{ ...statement, params: { ...params, buckets, cells: tuples } }];
    });
    const durations = addUp(
      (await readSides('reports.duration_values', valueStatements, again)).map((rows) =>
        keyedBy(rows, (row) => cellOf(groupIdentity(keys, row), Number(row.run_duration_bucket))),
      ),
    );
    const valueAt = ({ cell, within }: LevelPlace['low']) => {
      const distribution = durations.get(cell);
      return distribution?.values[locate(distribution, within).at];
    };
    const percentiles = new Map<string, GroupPercentiles>();
    for (const [group, { keyValues, finished, places }] of placed) {
      const values: number[] = [];
      for (const { low, high, fraction } of places) {
        const [lower, upper] = [valueAt(low), valueAt(high)];
        if (lower === undefined || upper === undefined) return undefined;
        // quantileExactInclusive's interpolation, in the same floating-point steps.
        values.push(lower + fraction * (upper - lower));
      }
      const named = Object.fromEntries(Object.keys(keys).map((name, i) => [name, keyValues[i]]));
      percentiles.set(group, { keyValues: named, finished, values });
    }
    return percentiles;
  }

  const percentiles = (await readOnce()) ?? (await readOnce(true));
  if (percentiles) return percentiles;
  throw new AppError(503, 'unavailable', 'the runs changed while the report read them; retry', [], {
    'Retry-After': '1',
  });
}
