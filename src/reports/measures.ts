// The measures of a report per group, by the cheaper of two paths: one pass over the raw rows of the windows, or
// the rollups (queries.ts) with the exact percentiles of durations.ts read beside them and put in their place.
import { groupIdentity, readPercentiles, type GroupKeys, type Grain, type RunQuery } from './durations';
import { isPercentileMeasure, selectMeasuresPer, summaryFilters, type SummaryFilter } from './queries';
import type { ReportShape } from './rollups';
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

/** One row per group with runs, holding its keys and the measures asked for. */
export async function readMeasures(query: RunQuery, read: MeasuresRead): Promise<MeasureRow[]> {
  const { name, keys, measures, filters, shape, grain, params } = read;
  const percentiles = measures.filter(isPercentileMeasure);
  if (shape === 'raw' || percentiles.length === 0)
    return query<MeasureRow>(name, selectMeasuresPer(keys, measures, filters, shape), params);
  // The counters need a statement of their own unless the percentiles' finished count is all they are.
  const counters = measures.filter((measure) => !isPercentileMeasure(measure));
  const [rows, byGroup] = await Promise.all([
    counters.some((measure) => measure !== 'finished_runs')
      ? query<MeasureRow>(name, selectMeasuresPer(keys, counters, filters, shape), params)
      : Promise.resolve([]),
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
