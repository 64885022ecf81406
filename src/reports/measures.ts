// The measures of a report per group, by the cheaper of two paths: one pass over the raw rows of the windows, or
// the rollups (queries.ts) with the exact percentiles of durations.ts read beside them and put in their place.
import { groupIdentity, readPercentiles, type GroupKeys, type Grain, type RunQuery } from './durations';
import {
  isPercentileMeasure,
  selectMeasuresPer,
  selectWholeHourPartials,
  summaryFilters,
  wholeHourTuples,
  type SummaryFilter,
} from './queries';
import { settledHours, type ReportShape } from './rollups';
import { percentileLevel, type Measure } from './signals';

export interface MeasuresRead {
  /** The statement's name in logs and query_log. */
  name: string;
  keys: GroupKeys;
  measures: readonly Measure[];
  filters: readonly SummaryFilter[];
  shape: ReportShape;
  /** Whether the groups hold whole days (durations.ts). */
  grain: Grain;
  /** The window parameters (service.ts) and the filters' values. */
  params: Record<string, unknown>;
}

export type MeasureRow = Record<string, unknown>;

/**
 * The measures that are not percentiles, per group. With rollups, the whole hours' partials first (a statement over
 * hours of the past, kept while their data parts stay the same), then the measures, with those partials passed back.
 */
async function readCounters(query: RunQuery, read: MeasuresRead, measures: readonly Measure[]) {
  const { name, keys, filters, shape, params } = read;
  const statement = selectMeasuresPer(keys, measures, filters, shape);
  if (shape === 'raw') return query<MeasureRow>(name, statement, params);
  const wholeHours = await query<MeasureRow>(
    `${name}.whole_hours`,
    selectWholeHourPartials(keys, measures, filters),
    params,
    settledHours(params),
  );
  return query<MeasureRow>(name, statement, { ...params, whole_hours: wholeHourTuples(keys, measures, wholeHours) });
}

/** One row per group with runs, holding its keys and the measures asked for. */
export async function readMeasures(query: RunQuery, read: MeasuresRead): Promise<MeasureRow[]> {
  const { keys, measures, filters, shape, grain, params } = read;
  const percentiles = measures.filter(isPercentileMeasure);
  if (shape === 'raw' || percentiles.length === 0) return readCounters(query, read, measures);
  // The counters need a statement of their own unless the percentiles' finished count is all they are.
  const counters = measures.filter((measure) => !isPercentileMeasure(measure));
  const [rows, byGroup] = await Promise.all([
    counters.some((measure) => measure !== 'finished_runs') ? readCounters(query, read, counters) : Promise.resolve([]),
    readPercentiles(
      query,
      keys,
      summaryFilters(filters),
      params,
      percentiles.map((measure) => percentileLevel(measure)!),
      grain,
    ),
  ]);
  const groups = new Map(rows.map((row) => [groupIdentity(keys, row), row]));
  for (const [identity, group] of byGroup) {
    const row = groups.get(identity) ?? { ...group.keyValues, finished_runs: group.finished };
    percentiles.forEach((measure, i) => (row[measure] = group.values[i]));
    groups.set(identity, row);
  }
  // A group without finished runs has no percentiles: 0, as the raw path's measures say.
  for (const row of groups.values()) for (const measure of percentiles) row[measure] ??= 0;
  return [...groups.values()];
}
