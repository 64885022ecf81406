// How many runs a project finishes per hour, lately: a report reads raw rows when its windows hold few runs, and the
// rollups when they hold many (rollups.ts, reportShape). The rollups' cost hardly grows with the runs, but each of
// their reads costs ~20–35 ms however little it reads; one pass over a few million raw rows costs less
// (docs/reports.md). One count from the hourly rollup per project, kept for RATE_TTL_MS: the rate only picks
// between two exact paths, so a stale one costs time, never a wrong figure.
import type { Clock } from '../clock';
import { toClickHouseTime } from '../db/clickhouse';
import type { RunQuery } from './durations';
import { fromProjection } from './rollups';
import { sql } from './sql';

const HOUR_MS = 3_600_000;
/** The stretch the rate is counted over: the last week's whole hours. */
const RATE_HOURS = 7 * 24;
const RATE_TTL_MS = 10 * 60_000;
/** Projects whose rate is kept at once: past it, the rates are counted afresh. */
const MAX_PROJECTS = 10_000;

const SELECT_RUNS_SINCE = sql`
  SELECT count() AS runs
  FROM runs
  WHERE project_id = {project_id:UUID}
    AND toStartOfHour(timestamp) >= {since:DateTime('UTC')} AND toStartOfHour(timestamp) < {until:DateTime('UTC')}
  ${fromProjection('hourly_all_agents')}`;

/** The runs per hour of each project, counted at most once per RATE_TTL_MS. */
export function runRates(query: RunQuery, clock: Clock): (projectId: string) => Promise<number> {
  const known = new Map<string, { perHour: number; until: number }>();
  return async (projectId) => {
    const now = clock.now().getTime();
    const cached = known.get(projectId);
    if (cached && cached.until > now) return cached.perHour;
    const until = Math.floor(now / HOUR_MS) * HOUR_MS;
    const [{ runs }] = await query<{ runs: number | string }>('reports.run_rate', SELECT_RUNS_SINCE, {
      project_id: projectId,
      since: toClickHouseTime(new Date(until - RATE_HOURS * HOUR_MS)).slice(0, 19),
      until: toClickHouseTime(new Date(until)).slice(0, 19),
    });
    const perHour = Number(runs) / RATE_HOURS;
    if (known.size >= MAX_PROJECTS) known.clear();
    known.set(projectId, { perHour, until: now + RATE_TTL_MS });
    return perHour;
  };
}
