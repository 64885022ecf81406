// The sessions (contract §10): a list of the sessions with runs in a window, newest last run first, and one session
// with its runs. A session's figures count its runs of the window (those that match the list's filters). No HTTP.
import { HOUR_MS, type Clock } from '../clock';
import { fromClickHouseTime, toClickHouseTime, type ClickHouseStore, type QueryLimits } from '../db/clickhouse';
import { notFound } from '../errors';
import { hourWindowParams, wholeHours } from '../reports/rollups';
import { retainedPart, type TimeRange } from '../reports/window-runs';
import type { RetainedFrom } from '../retention/cutoffs';
import type { Run } from '../runs/model';
import { storedRun, toRun, type FinishedRunRow, type RunningRunRow } from '../runs/tables';
import * as q from './queries';

/** A session as the API shows it. */
export interface Session {
  session_id: string;
  user_ids: string[];
  agents: string[];
  first_run_at: string;
  last_run_at: string;
  total_runs: number;
  running_runs: number;
  completed_runs: number;
  failed_runs: number;
  loop_runs: number;
  total_steps: number;
  total_tokens: number;
  total_cost_usd: number;
  duration_ms: number;
}

export interface SessionFilters {
  agent_name?: string;
  user_id?: string;
}

interface FiguresRow {
  session_id: string;
  total_runs: number;
  running_runs: number;
  completed_runs: number;
  loop_runs: number;
  first_run_at: string;
  last_run_at: string;
  last_finished_at: string;
  total_steps: number;
  total_tokens: number;
  total_cost_usd: number;
  agents: string[];
  user_ids: string[];
}

/**
 * What a run of a session written before session numbers reads as (schema/clickhouse/0011): 2^63, a Number exactly
 * (the engine's JSON gives a UInt64 as a number or as text).
 */
const SESSION_NOT_NUMBERED = 2 ** 63;
/**
 * How far back from a window's end a page's keys are looked for among the newest runs, widened in turn until they
 * hold the page's sessions (hours). Past the last, the page groups every session of the window.
 */
const NEWEST_HOURS = [1, 6, 36];

type PageKey = { session_id: string; first_run_at?: string; last_run_at: string; session_number?: string };
type Page = { keys: PageKey[]; total: number };

/**
 * The statement and parameters of a page's figures: by their numbers where the page has them (the projection
 * `sessions_by_number` finds them over any window), else by their ids within the span of their runs (phase one's).
 */
function figuresOf(
  shape: q.SessionShape,
  used: readonly q.SessionFilter[],
  params: Record<string, unknown>,
  keys: PageKey[],
): [string, Record<string, unknown>] {
  if (keys.every((key) => key.session_number !== undefined))
    return [
      q.selectSessionFigures(shape, ['numbers']),
      { ...params, numbers: keys.map((key) => Number(key.session_number)) },
    ];
  // ClickHouse's time strings sort as the times do.
  const firsts = keys.map((key) => key.first_run_at!).sort();
  const lasts = keys.map((key) => key.last_run_at).sort();
  return [
    q.selectSessionFigures(shape, [...used, 'sessions', 'span']),
    { ...params, sessions: keys.map((key) => key.session_id), span_first: firsts[0], span_last: lasts.at(-1) },
  ];
}

/** A session lists at most this many of its users. */
const MAX_USER_IDS = 10;
/** A session's detail lists at most this many of its runs. */
export const MAX_SESSION_RUNS = 1000;

/** A session's figures: counts as numbers; its duration ends now while a run of it runs, else at its last finish. */
function toSession(row: FiguresRow, now: Date): Session {
  const running = Number(row.running_runs);
  const first = fromClickHouseTime(row.first_run_at);
  const end = running > 0 ? now : fromClickHouseTime(row.last_finished_at);
  return {
    session_id: row.session_id,
    user_ids: row.user_ids.slice(0, MAX_USER_IDS),
    agents: row.agents,
    first_run_at: first.toISOString(),
    last_run_at: fromClickHouseTime(row.last_run_at).toISOString(),
    total_runs: Number(row.total_runs),
    running_runs: running,
    completed_runs: Number(row.completed_runs),
    failed_runs: Number(row.total_runs) - running - Number(row.completed_runs),
    loop_runs: Number(row.loop_runs),
    total_steps: Number(row.total_steps),
    total_tokens: Number(row.total_tokens),
    total_cost_usd: Number(row.total_cost_usd),
    duration_ms: Math.max(0, end.getTime() - first.getTime()),
  };
}

/**
 * The projection answers the whole hours of a window, with no filter it has no dimension for; a window without a
 * whole hour is read raw.
 */
function shapeOf(window: TimeRange, filters: SessionFilters): q.SessionShape {
  const hours = wholeHours(window);
  const filtered = filters.agent_name !== undefined || filters.user_id !== undefined;
  return filtered || hours.from >= hours.to ? 'raw' : 'rollups';
}

export function sessionService(ch: ClickHouseStore, clock: Clock, limits: QueryLimits, retainedFrom: RetainedFrom) {
  const query = <Row>(name: string, sql: string, params: Record<string, unknown>) =>
    ch.query<Row>({ name, sql, params, limits });

  /** The parameters of a window, its whole hours, and the filters used. */
  async function windowParams(projectId: string, sent: TimeRange, filters: SessionFilters) {
    const window = retainedPart(sent, await retainedFrom(projectId));
    const used = (['agent_name', 'user_id'] as const).filter((filter) => filters[filter] !== undefined);
    return {
      window,
      shape: shapeOf(window, filters),
      used,
      params: {
        ...hourWindowParams(projectId, window, clock.now()),
        ...Object.fromEntries(used.map((filter) => [filter, filters[filter]])),
      },
    };
  }

  /**
   * A page of a window's sessions from the bitmaps of session numbers (the count) and the window's newest runs (the
   * keys); undefined when the window holds runs of sessions not numbered, or the page lies deeper than the newest
   * runs looked at.
   */
  async function numberedPage(
    window: TimeRange,
    params: Record<string, unknown>,
    page: { limit: number; offset: number },
  ): Promise<Page | undefined> {
    const [[count], keys] = await Promise.all([
      query<{ total: string; highest: string }>('sessions.count', q.SELECT_SESSION_COUNT, params),
      newestSessions(window, params, page),
    ]);
    if (Number(count.highest) === SESSION_NOT_NUMBERED || !keys) return undefined;
    return { keys, total: Number(count.total) };
  }

  /** The page's keys among the newest runs of the window, looked for further back until they hold the page. */
  async function newestSessions(
    window: TimeRange,
    params: Record<string, unknown>,
    page: { limit: number; offset: number },
  ): Promise<PageKey[] | undefined> {
    for (const hours of NEWEST_HOURS) {
      const from = new Date(Math.max(window.from.getTime(), window.to.getTime() - hours * HOUR_MS));
      const { rows, rowsBeforeLimit } = await ch.queryCounted<PageKey>({
        name: 'sessions.newest',
        sql: q.SELECT_NEWEST_SESSIONS,
        params: { ...params, newest_from: toClickHouseTime(from), limit: page.limit, offset: page.offset },
        limits,
      });
      if (rowsBeforeLimit >= page.offset + page.limit || from <= window.from) return rows;
    }
    return undefined;
  }

  return {
    /** A page of the sessions with runs in the window, by last run (newest first) then id, and how many there are. */
    async list(
      projectId: string,
      sent: TimeRange,
      page: { limit: number; offset: number },
      filters: SessionFilters,
    ): Promise<{ sessions: Session[]; total: number }> {
      const { window, shape, used, params } = await windowParams(projectId, sent, filters);
      const numbered = shape === 'rollups' && used.length === 0;
      const { keys, total } = (numbered && (await numberedPage(window, params, page))) || (await groupedPage());
      if (keys.length === 0) return { sessions: [], total };
      const figures = await query<FiguresRow>('sessions.figures', ...figuresOf(shape, used, params, keys));
      const now = clock.now();
      const bySession = new Map(figures.map((row) => [row.session_id, toSession(row, now)]));
      return {
        sessions: keys.flatMap((key) => bySession.get(key.session_id) ?? []),
        total,
      };

      /** The page's keys and the count by grouping every session of the window (filters; runs not numbered). */
      async function groupedPage(): Promise<Page> {
        const { rows, rowsBeforeLimit } = await ch.queryCounted<PageKey>({
          name: 'sessions.page',
          sql: q.selectSessionPage(shape, used),
          params: { ...params, limit: page.limit, offset: page.offset },
          limits,
        });
        return { keys: rows, total: rowsBeforeLimit };
      }
    },

    /** One session's figures over the window and its runs in start order (at most MAX_SESSION_RUNS); 404 if none. */
    async get(projectId: string, sessionId: string, window: TimeRange): Promise<{ session: Session; runs: Run[] }> {
      const { params } = await windowParams(projectId, window, {});
      const withSession = { ...params, session_id: sessionId };
      const [figures] = await query<FiguresRow>(
        'sessions.one',
        q.selectSessionFigures('raw', ['session']),
        withSession,
      );
      if (!figures) throw notFound('session');
      const rows = await query<FinishedRunRow | RunningRunRow>('sessions.runs', q.SELECT_SESSION_RUNS, {
        ...withSession,
        limit: MAX_SESSION_RUNS,
      });
      return { session: toSession(figures, clock.now()), runs: rows.map((row) => toRun(storedRun(row))) };
    },
  };
}

export type SessionService = ReturnType<typeof sessionService>;
