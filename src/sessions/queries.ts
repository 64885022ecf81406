// SQL of the sessions (contract §10): the list (a page of keys, then the page's figures), one session's figures and
// its runs. A session's figures are sums over its runs of the window, so they come in partials per source of runs,
// added up per session: the `sessions` projection of `runs` for the window's whole hours (one row per session and
// hour, schema/clickhouse/0006), raw finished rows for the partial hours at the edges, and the running runs of
// live_runs. With a filter (agent, user), which the projection has no dimension for, the finished runs are read raw.
// Values always travel as bound parameters; the only variable text is fixed fragments.
import { sql, andEach } from '../reports/sql';
import { inWindowHours, outsideWindowHours } from '../reports/rollups';
import { IN_WINDOW, LIVE_NOT_FINISHED, timeParam } from '../reports/window-runs';
import { EITHER_TABLE_SELECT } from '../runs/tables';

/** How the finished runs are read: the projection for whole hours (and raw edges), or raw rows throughout. */
export type SessionShape = 'rollups' | 'raw';

/** The list's filters, a fixed fragment each, over a row of either run table. */
export const SESSION_FILTERS = {
  agent_name: 'agent_name = {agent_name:String}',
  user_id: 'user_id = {user_id:String}',
  // The page's sessions, in its second phase, and the span of their runs in the window (from the first phase): their
  // rows are read in that span alone, not through the session index over the whole window (which read ~6,000
  // granules' filters for 25 sessions at 100 M runs: 950 ms).
  sessions: 'session_id IN {sessions:Array(String)}',
  span: `timestamp >= ${timeParam('span_first')} AND timestamp <= ${timeParam('span_last')}`,
  session: 'session_id = {session_id:String}',
  // A page's sessions by their numbers (schema/clickhouse/0011): the whole hours come from `sessions_by_number`,
  // which finds them in a few granules over any window.
  numbers: 'session_number IN {numbers:Array(UInt64)}',
} as const;
export type SessionFilter = keyof typeof SESSION_FILTERS;

const COST = 'sum(toDecimal128(least(total_cost_usd, 1e14), 12))';

/**
 * A session's partials over finished rows, in the projection's own expressions (so that ClickHouse answers them
 * from it over whole hours), then the same over live rows, which are all running. `bounds` (a session's first and last
 * run) is what a page's first phase reads: its order, and the span its second phase reads.
 */
const PARTIALS = {
  finished: {
    all: `count() AS p_runs, 0 AS p_running, countIf(status = 'completed') AS p_completed,
      countIf(loop_detected) AS p_loops, min(timestamp) AS p_first, max(timestamp) AS p_last,
      max(finished_at) AS p_last_finish, sum(total_steps) AS p_steps, sum(total_tokens) AS p_tokens,
      ${COST} AS p_cost, groupUniqArray(agent_name) AS p_agents, groupUniqArray(user_id) AS p_users`,
    bounds: 'min(timestamp) AS p_first, max(timestamp) AS p_last',
  },
  live: {
    all: `count() AS p_runs, count() AS p_running, 0 AS p_completed,
      countIf(loop_detected) AS p_loops, min(timestamp) AS p_first, max(timestamp) AS p_last,
      toDateTime64(0, 3, 'UTC') AS p_last_finish, sum(total_steps) AS p_steps, sum(total_tokens) AS p_tokens,
      ${COST} AS p_cost, groupUniqArray(agent_name) AS p_agents, groupUniqArray(user_id) AS p_users`,
    bounds: 'min(timestamp) AS p_first, max(timestamp) AS p_last',
  },
} as const;
type Partials = 'all' | 'bounds';

const IN_SESSION = "session_id != ''";

/** Finished rows of the window's whole hours, by the projection's hour: ClickHouse reads the projection. */
const IN_WHOLE_HOURS = sql`
  project_id = {project_id:UUID}
    AND ${inWindowHours('toStartOfHour(timestamp)')}`;
const OUTSIDE_WHOLE_HOURS = outsideWindowHours('timestamp');

const finishedPartials = (where: string, partials: Partials, filters: readonly string[]) => sql`
  SELECT session_id,
    ${PARTIALS.finished[partials]}
  FROM runs
  WHERE ${where}${andEach([IN_SESSION, ...filters])}
  GROUP BY session_id`;

/**
 * Every source of a session's partials, each grouped by session: the finished runs first (the projection's whole
 * hours in the rollups shape, the raw window else), then the small ones (the raw edges, the running runs).
 */
function partialSources(shape: SessionShape, partials: Partials, filters: readonly SessionFilter[]): string[] {
  const conditions = filters.map((filter) => SESSION_FILTERS[filter]);
  const finished =
    shape === 'raw'
      ? [finishedPartials(IN_WINDOW, partials, conditions)]
      : [
          finishedPartials(IN_WHOLE_HOURS, partials, conditions),
          finishedPartials(`${IN_WINDOW}\n  AND ${OUTSIDE_WHOLE_HOURS}`, partials, conditions),
        ];
  const live = sql`
    SELECT session_id,
      ${PARTIALS.live[partials]}
    FROM live_runs FINAL
    WHERE ${LIVE_NOT_FINISHED}${andEach([IN_SESSION, ...conditions])}
    GROUP BY session_id`;
  return [...finished, live];
}

const unionAll = (selects: readonly string[]) => selects.map((select) => `(${select})`).join('\nUNION ALL\n');

/**
 * Phase one of a page: the sessions at [offset, offset + limit) by their last run in the window, newest first (then
 * by id), each with its first run in the window. Read with `queryCounted`: the rows before its LIMIT are the window's
 * sessions, counted in the same read. The first source (at 100 M runs, 2.85 M sessions in 30 days) is joined to the
 * others grouped together, not grouped again with them: a second grouping of its millions of sessions took ~280 ms
 * there, a join looking each up among the few thousand sessions of the others ~80 (BENCHMARKS.md). A side without the
 * session gives its type's defaults (join_use_nulls = 0): 0 in its `in_` flag, the epoch as its times.
 */
export function selectSessionPage(shape: SessionShape, filters: readonly SessionFilter[]): string {
  const [bulk, ...rest] = partialSources(shape, 'bounds', filters);
  return sql`
  SELECT session_id,
    if(in_rest = 0, bulk.p_first, if(in_bulk = 0, rest.p_first, least(bulk.p_first, rest.p_first))) AS first_run_at,
    greatest(bulk.p_last, rest.p_last) AS last_run_at
  FROM (SELECT *, 1 AS in_bulk FROM (${bulk})) AS bulk
  FULL OUTER JOIN (
    SELECT session_id, min(p_first) AS p_first, max(p_last) AS p_last, 1 AS in_rest
    FROM (${unionAll(rest)})
    GROUP BY session_id
  ) AS rest USING (session_id)
  ORDER BY last_run_at DESC, session_id
  LIMIT {limit:UInt64} OFFSET {offset:UInt64}
  SETTINGS join_use_nulls = 0`;
}

/** Phase two, and a session's own figures: every figure of the sessions the filters name (`sessions`, `session`). */
export const selectSessionFigures = (shape: SessionShape, filters: readonly SessionFilter[]) => sql`
  SELECT session_id,
    sum(p_runs) AS total_runs,
    sum(p_running) AS running_runs,
    sum(p_completed) AS completed_runs,
    sum(p_loops) AS loop_runs,
    min(p_first) AS first_run_at,
    max(p_last) AS last_run_at,
    max(p_last_finish) AS last_finished_at,
    sum(p_steps) AS total_steps,
    sum(p_tokens) AS total_tokens,
    toFloat64(sum(p_cost)) AS total_cost_usd,
    arraySort(groupUniqArrayArray(p_agents)) AS agents,
    arraySort(arrayFilter(user -> user != '', groupUniqArrayArray(p_users))) AS user_ids
  FROM (
    ${unionAll(partialSources(shape, 'all', filters))}
  )
  GROUP BY session_id`;

/** A session's runs of the window in start order (then by id), finished and running, as runs/tables.ts reads them. */
export const SELECT_SESSION_RUNS = sql`
  SELECT * FROM (
    SELECT ${EITHER_TABLE_SELECT.runs}
    FROM runs
    WHERE ${IN_WINDOW} AND session_id = {session_id:String}
    UNION ALL
    SELECT ${EITHER_TABLE_SELECT.live_runs}
    FROM live_runs FINAL
    WHERE ${LIVE_NOT_FINISHED} AND session_id = {session_id:String})
  ORDER BY timestamp, toString(id)
  LIMIT {limit:UInt64}`;

// The exact count of a window's sessions from the hours' bitmaps of session numbers (schema/clickhouse/0011): the
// union of the whole hours' bitmaps, plus the sessions of the partial hours at the edges and of the running runs
// (`extra`, read raw) less those of them already in the whole hours (found by number in `sessions_by_number`). A bitmap
// counts 0 when its hours hold runs outside sessions (`lowest`). `highest` is SESSION_NOT_NUMBERED where a run of a
// session was written before numbers were (the caller counts by grouping then). `extra` is a scalar, read once (as a
// CTE it was read for each use: ~65 ms each at 100 M runs), and sent to every shard of a cluster with the statement,
// where a session's runs lie on several shards (runs are sharded by run).
const EXTRA_SESSIONS = sql`
  SELECT groupArray(DISTINCT session_number) FROM (
    SELECT session_number FROM runs
    WHERE ${IN_WINDOW} AND ${OUTSIDE_WHOLE_HOURS} AND ${IN_SESSION}
    UNION ALL
    SELECT session_number FROM live_runs FINAL
    WHERE ${LIVE_NOT_FINISHED} AND ${IN_SESSION})`;

export const SELECT_SESSION_COUNT = sql`
  WITH (${EXTRA_SESSIONS}) AS extra
  SELECT
    whole.sessions - (whole.sessions > 0 AND whole.lowest = 0) + length(extra) - (
      SELECT count() FROM (
        SELECT session_number FROM runs
        WHERE ${IN_WHOLE_HOURS} AND session_number IN (SELECT arrayJoin(extra))
        GROUP BY session_number)
    ) AS total,
    greatest(whole.highest, arrayMax(extra)) AS highest
  FROM (
    SELECT groupBitmap(session_number) AS sessions, min(session_number) AS lowest, max(session_number) AS highest
    FROM runs
    WHERE ${IN_WHOLE_HOURS}
  ) AS whole`;

/**
 * A page's keys from the window's newest runs, from {newest_from} on: a session with a run there has its last run of
 * the window there, so when they hold at least offset + limit sessions (or reach the window's start), the page is
 * theirs, newest last run first (then by id). Read with \`queryCounted\`: the rows before the LIMIT say how many.
 */
export const SELECT_NEWEST_SESSIONS = sql`
  SELECT session_id, any(session_number) AS session_number, max(timestamp) AS last_run_at
  FROM (
    SELECT session_id, session_number, timestamp FROM runs
    WHERE ${IN_WINDOW} AND timestamp >= ${timeParam('newest_from')} AND ${IN_SESSION}
    UNION ALL
    SELECT session_id, session_number, timestamp FROM live_runs FINAL
    WHERE ${LIVE_NOT_FINISHED} AND timestamp >= ${timeParam('newest_from')} AND ${IN_SESSION})
  GROUP BY session_id
  ORDER BY last_run_at DESC, session_id
  LIMIT {limit:UInt64} OFFSET {offset:UInt64}`;
