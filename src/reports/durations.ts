// Exact duration percentiles from the duration projections of `runs` (schema/clickhouse/0005), in two steps instead
// of one pass over every finished run of a window.
//
// A percentile is the value at a rank, or between two ranks (contract §5; ClickHouse's quantileExactInclusive).
// Step one counts the finished runs of each duration bucket per group — the hourly bucket counts for the window's
// whole hours, raw rows for the partial hours at its edges — and finds the bucket that holds each rank, and the rank
// within it. Step two counts the runs of each distinct duration of those buckets alone (from the projection keyed by
// bucket, then hour, then duration) and reads the value at each rank. A 30-day window at 100 M runs reads a few
// hundred rows per hour in each step instead of every run: the cost grows with the hours and buckets of the window,
// not with its runs.
import { TupleParam } from '@clickhouse/client';
import {
  AS_DAILY_ROLLUP_COLUMNS,
  AS_ROLLUP_COLUMNS,
  fromProjection,
  IN_WHOLE_DAYS,
  IN_WHOLE_HOURS,
  IN_WHOLE_HOURS_OUTSIDE_DAYS,
  OUTSIDE_WHOLE_HOURS,
} from './rollups';
import { andEach, sql, whereAll } from './sql';
import { finishedRunsOfWindow, NO_PROJECTION_LOOKUP } from './window-runs';

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

/**
 * Per group and cell (a duration bucket; or a bucket and a duration), how many finished runs match `filters`: the
 * whole days from a daily duration projection (with the `day` grain), the other whole hours from an hourly one
 * (their expressions, through AS_ROLLUP_COLUMNS' aliases), the partial hours from raw rows, planned without a look at
 * the projections, which cannot answer them. `only` narrows every side to the cells asked for.
 */
function cellCounts(keys: GroupKeys, cell: string, filters: readonly string[], only: readonly string[], grain: Grain) {
  const conditions = andEach([...filters, ...only]);
  // The duration projections of schema/clickhouse/0005, by their names.
  const projection = (daily: boolean) =>
    fromProjection(
      `${daily ? 'daily_' : ''}${readsAgent(keys, filters) ? 'agent_' : ''}duration_` +
        (cell.includes('run_duration_ms') ? 'values' : 'buckets'),
    );
  const dailyLeaf = sql`
    SELECT * FROM (
      ${AS_DAILY_ROLLUP_COLUMNS}
      SELECT ${keyColumns(keys)}, ${cell}, count() AS runs
      FROM runs
      WHERE ${IN_WHOLE_DAYS}${conditions}
      GROUP BY ${keyNames(keys)}, ${cell}
      ${projection(true)})
    UNION ALL`;
  return sql`
    SELECT ${keyNames(keys)}, ${cell}, sum(runs) AS runs
    FROM (
      ${grain === 'day' ? dailyLeaf : ''}
      SELECT * FROM (
        ${AS_ROLLUP_COLUMNS}
        SELECT ${keyColumns(keys)}, ${cell}, count() AS runs
        FROM runs
        WHERE ${grain === 'day' ? IN_WHOLE_HOURS_OUTSIDE_DAYS : IN_WHOLE_HOURS}${conditions}
        GROUP BY ${keyNames(keys)}, ${cell}
        ${projection(false)})
      UNION ALL
      SELECT * FROM (
        SELECT ${keyColumns(keys)}, ${cell}, count() AS runs
        FROM (
          ${finishedRunsOfWindow([OUTSIDE_WHOLE_HOURS])}
          ${NO_PROJECTION_LOOKUP}
        ) ${whereAll([...filters, ...only])}
        GROUP BY ${keyNames(keys)}, ${cell}))
    GROUP BY ${keyNames(keys)}, ${cell}`;
}

/**
 * A group's values of `value` in ascending order, and the cumulative counts of its `runs` in the same order. Two arrays
 * of one aggregation hold a group's rows in the same order; sorting one by the other is cheaper than sorting an array
 * of tuples (the step one of a 30-day hourly time series by the rollups at 10 M runs, 20 interleaved runs: 175 →
 * 135 ms median).
 */
const ascending = (value: string) => sql`
  arraySort(groupArray(${value})) AS sorted,
  arrayCumSum(arraySort((count, key) -> key, groupArray(runs), groupArray(${value}))) AS cumulative`;

/** Where each rank of `ranks` lies: (bucket, rank within the bucket), from a group's cumulative bucket counts. */
const locateRanks = (ranks: string) => sql`
  arrayMap((rank, at) -> (sorted[at], rank - if(at = 1, 0, cumulative[at - 1])),
    ${ranks},
    arrayMap(rank -> arrayFirstIndex(reached -> reached >= rank, cumulative), ${ranks}))`;

/**
 * Step one, per group: `finished`, the finished runs that match, and for each level of {levels:Array(Float64)} the
 * place of its two ranks, as quantileExactInclusive takes them: h = level × (finished − 1) + 1, the lower rank ⌊h⌋
 * and the upper ⌊h⌋ + 1 (1-based; both the last when ⌊h⌋ reaches `finished`), and the fraction h − ⌊h⌋ between
 * their values.
 */
export const selectRankBuckets = (keys: GroupKeys, filters: readonly string[], grain: Grain) => sql`
  SELECT ${keyNames(keys)}, finished,
    ${locateRanks('lower_ranks')} AS lower_cells,
    ${locateRanks('upper_ranks')} AS upper_cells,
    arrayMap(h -> h - toUInt64(h), positions) AS fractions
  FROM (
    SELECT ${keyNames(keys)},
      ${ascending('run_duration_bucket')},
      cumulative[-1] AS finished,
      arrayMap(level -> level * (finished - 1) + 1, {levels:Array(Float64)}) AS positions,
      arrayMap(h -> least(toUInt64(h), finished), positions) AS lower_ranks,
      arrayMap(rank -> least(rank + 1, finished), lower_ranks) AS upper_ranks
    FROM (
      ${cellCounts(keys, 'run_duration_bucket', filters, [], grain)}
    )
    GROUP BY ${keyNames(keys)})`;

/** The type of a wanted cell: its group's keys, then the bucket (DURATION_BUCKET is an Int64). */
const cellType = (keys: GroupKeys) => `Tuple(${[...Object.values(keys).map((key) => key.type), 'Int64'].join(', ')})`;

/**
 * Step two: per wanted cell (group and bucket) of {cells:Array(…)}, the durations at the ranks within the bucket
 * that {ranks:Array(Array(UInt64))} names for it (in the same order). {buckets:Array(Int64)} is the cells' buckets,
 * which bound the projection's primary key.
 */
export const selectRankValues = (keys: GroupKeys, filters: readonly string[], grain: Grain) => {
  const cell = `(${keyNames(keys)}, run_duration_bucket)`;
  const cellColumns = [...Object.keys(keys), 'run_duration_bucket']
    .map((name, i) => `tupleElement(cell, ${i + 1}) AS ${name}`)
    .join(', ');
  return sql`
    SELECT ${keyNames(keys)}, run_duration_bucket, ranks,
      arrayMap(rank -> sorted[arrayFirstIndex(reached -> reached >= rank, cumulative)], ranks) AS durations
    FROM (
      SELECT ${keyNames(keys)}, run_duration_bucket,
        ${ascending('run_duration_ms')}
      FROM (
        ${cellCounts(
          keys,
          'run_duration_bucket, run_duration_ms',
          filters,
          ['run_duration_bucket IN {buckets:Array(Int64)}', `${cell} IN {cells:Array(${cellType(keys)})}`],
          grain,
        )}
      )
      GROUP BY ${keyNames(keys)}, run_duration_bucket
    ) AS found
    INNER JOIN (
      SELECT ${cellColumns}, ranks
      FROM system.one
      ARRAY JOIN {cells:Array(${cellType(keys)})} AS cell, {ranks:Array(Array(UInt64))} AS ranks
    ) AS wanted USING (${keyNames(keys)}, run_duration_bucket)`;
};

/** A row of step one: a group's keys, its finished count and, per level, its ranks' cells and fraction. */
type RankBucketsRow = Record<string, unknown> & {
  finished: number;
  lower_cells: [number, number][];
  upper_cells: [number, number][];
  fractions: number[];
};
/** A row of step two: a wanted cell's keys and bucket, and the duration at each rank asked for. */
type RankValuesRow = Record<string, unknown> & { run_duration_bucket: number; ranks: number[]; durations: number[] };

/** Runs a statement with its name and parameters (the report service's query, with its limits). */
export type RunQuery = <Row>(name: string, sql: string, params: Record<string, unknown>) => Promise<Row[]>;

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

/**
 * The exact percentiles at `levels` of the finished runs of each group (keyed by groupIdentity), by the two steps:
 * a group without finished runs has no entry. `params` are the report's window parameters (rollups.ts) and its
 * filters' values.
 */
export async function readPercentiles(
  query: RunQuery,
  keys: GroupKeys,
  filters: readonly string[],
  params: Record<string, unknown>,
  levels: readonly number[],
  grain: Grain,
): Promise<Map<string, GroupPercentiles>> {
  const groups = await query<RankBucketsRow>('reports.duration_buckets', selectRankBuckets(keys, filters, grain), {
    ...params,
    levels,
  });
  if (groups.length === 0) return new Map();
  // Each cell (group and bucket) once, with every rank wanted in it.
  const wanted = new Map<string, { keyValues: unknown[]; bucket: number; ranks: Set<number> }>();
  for (const group of groups) {
    for (const [bucket, rank] of [...group.lower_cells, ...group.upper_cells]) {
      const keyValues = Object.keys(keys).map((name) => group[name]);
      const cell = JSON.stringify([...keyValues, bucket]);
      if (!wanted.has(cell)) wanted.set(cell, { keyValues, bucket, ranks: new Set() });
      wanted.get(cell)!.ranks.add(rank);
    }
  }
  const cells = [...wanted.values()];
  const found = await query<RankValuesRow>('reports.duration_values', selectRankValues(keys, filters, grain), {
    ...params,
    buckets: [...new Set(cells.map((cell) => cell.bucket))],
    cells: cells.map((cell) => new TupleParam([...cell.keyValues, cell.bucket])),
    ranks: cells.map((cell) => [...cell.ranks]),
  });
  const durationAt = new Map<string, number>();
  for (const row of found) {
    const identity = JSON.stringify([...Object.keys(keys).map((name) => row[name]), row.run_duration_bucket]);
    row.ranks.forEach((rank, i) => durationAt.set(`${identity}/${rank}`, Number(row.durations[i])));
  }
  const at = (group: RankBucketsRow, [bucket, rank]: [number, number]) => {
    const cell = JSON.stringify([...Object.keys(keys).map((name) => group[name]), bucket]);
    return durationAt.get(`${cell}/${rank}`)!;
  };
  return new Map(
    groups.map((group) => [
      groupIdentity(keys, group),
      {
        keyValues: Object.fromEntries(Object.keys(keys).map((name) => [name, group[name]])),
        finished: Number(group.finished),
        // quantileExactInclusive's interpolation, in the same floating-point steps.
        values: levels.map((_, i) => {
          const lower = at(group, group.lower_cells[i]);
          return lower + group.fractions[i] * (at(group, group.upper_cells[i]) - lower);
        }),
      },
    ]),
  );
}
