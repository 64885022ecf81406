// How many runs a project finishes per hour, lately: a report reads raw rows when its windows hold few runs, and the
// rollups when they hold many (rollups.ts, reportShape). The rollups' cost hardly grows with the runs, but each of
// their reads costs ~20–35 ms however little it reads; one pass over a few million raw rows costs less
// (docs/reports.md). One count from the hourly rollup per project, kept for RATE_TTL_MS: the rate only picks
// between two exact paths, so a stale one costs time, never a wrong figure.
import { HOUR_MS, type Clock } from '../clock';
import { toClickHouseTime } from '../db/clickhouse';
import type { RunQuery } from './durations';
import { fromProjection, inWindowHours, wholeHours } from './rollups';
import { sql } from './sql';

/** The stretch the rate is counted over: the whole hours of the last week. */
const RATE_MS = 7 * 24 * HOUR_MS;
const RATE_TTL_MS = 10 * 60_000;
/** Projects whose rate is kept at once: past it, the rates are counted afresh. */
const MAX_PROJECTS = 10_000;

const SELECT_RUNS_SINCE = sql`
  SELECT count() AS runs
  FROM runs
  WHERE project_id = {project_id:UUID}
    AND ${inWindowHours('toStartOfHour(timestamp)')}
  ${fromProjection('hourly_all_agents')}`;

/** The runs per hour of each project, counted at most once per RATE_TTL_MS. */
export function runRates(query: RunQuery, clock: Clock): (projectId: string) => Promise<number> {
  const known = new Map<string, { perHour: number; expiresAt: number }>();
  return async (projectId) => {
    const now = clock.now();
    const cached = known.get(projectId);
    if (cached && cached.expiresAt > now.getTime()) return cached.perHour;
    const hours = wholeHours({ from: new Date(now.getTime() - RATE_MS), to: now });
    const [{ runs }] = await query<{ runs: number | string }>('reports.run_rate', SELECT_RUNS_SINCE, {
      project_id: projectId,
      hours_start: toClickHouseTime(hours.from),
      hours_end: toClickHouseTime(hours.to),
    });
    const perHour = (Number(runs) * HOUR_MS) / (hours.to.getTime() - hours.from.getTime());
    if (known.size >= MAX_PROJECTS) known.clear();
    known.set(projectId, { perHour, expiresAt: now.getTime() + RATE_TTL_MS });
    return perHour;
  };
}
