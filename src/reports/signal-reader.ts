// An alert round's reading of a project: every signal of each scope (all agents or one, a window ending at `at`).
// Scopes of short windows are read in one raw pass (signals.ts, selectScopedSignals); each longer window length is
// read as the summary reads a window (measures.ts): its whole hours from the rollups and the duration projections,
// for all agents and for the scopes' agents at once. So a round's cost grows with the distinct window lengths of its
// rules, not with the rules, and a 30-day window costs about what a day does.
import { toClickHouseTime, type ClickHouseStore, type QueryLimits } from '../db/clickhouse';
import { STORABLE_TIMES } from '../http/schemas';
import { reportQuery } from './durations';
import { readMeasures, type MeasureRow } from './measures';
import { GROUP_KEYS } from './queries';
import { alone, reportShape, windowParams } from './rollups';
import {
  READING_MEASURES,
  scopeKey,
  selectScopedSignals,
  toReadings,
  type SignalReadings,
  type SignalScope,
} from './signals';
import { retainedPart, storedSince } from './window-runs';

type ScopedRow = MeasureRow & { window_index: number; all_agents: number | boolean; agent_name: string };

export function signalReader(ch: ClickHouseStore, limits: QueryLimits) {
  const query = reportQuery(ch, limits);

  /**
   * The scopes of short windows, in one raw pass over the longest of them: their rows by scopeKey. With a user, the
   * scopes of that user (of any window: the rollups have no user dimension).
   */
  async function readShortWindows(
    projectId: string,
    scopes: readonly SignalScope[],
    at: Date,
    startOf: (seconds: number) => Date,
    userId: string | null = null,
  ) {
    const found = new Map<string, MeasureRow>();
    if (scopes.length === 0) return found;
    const windows = [...new Set(scopes.map((scope) => scope.windowSeconds))].sort((a, b) => a - b);
    const agents = [...new Set(scopes.flatMap((scope) => (scope.agentName === null ? [] : [scope.agentName])))];
    const anyAllAgents = scopes.some((scope) => scope.agentName === null);
    const grouping = agents.length === 0 ? 'all' : anyAllAgents ? 'both' : 'agents';
    const rows = await query<ScopedRow>(`signals.scoped_${grouping}`, selectScopedSignals(grouping, userId !== null), {
      project_id: projectId,
      stored_since: storedSince(at),
      window_start: toClickHouseTime(startOf(windows[windows.length - 1])),
      window_end: toClickHouseTime(at),
      window_starts: windows.map((seconds) => toClickHouseTime(startOf(seconds))),
      ...(grouping === 'agents' ? { scope_agents: agents } : {}),
      ...(userId === null ? {} : { user_id: userId }),
    });
    for (const row of rows) {
      const agentName = row.all_agents === true || row.all_agents === 1 ? null : row.agent_name;
      found.set(scopeKey({ agentName, userId, windowSeconds: windows[row.window_index - 1] }), row);
    }
    return found;
  }

  /**
   * The scopes of one long window length, as the summary reads that window: all agents in one read, the scopes'
   * agents in another, grouped by agent. Their rows by scopeKey.
   */
  async function readLongWindow(projectId: string, scopes: readonly SignalScope[], from: Date, to: Date) {
    const found = new Map<string, MeasureRow>();
    const windowSeconds = scopes[0].windowSeconds;
    const params = windowParams(projectId, alone({ from, to }), to);
    const read = { measures: READING_MEASURES, shape: 'rollups' as const, grain: 'day' as const };
    if (scopes.some((scope) => scope.agentName === null)) {
      const [row] = await readMeasures(query, {
        ...read,
        name: 'signals.window',
        keys: { is_current: GROUP_KEYS.is_current },
        filters: [],
        params,
      });
      if (row) found.set(scopeKey({ agentName: null, windowSeconds }), row);
    }
    const agents = [...new Set(scopes.flatMap((scope) => (scope.agentName === null ? [] : [scope.agentName])))];
    if (agents.length > 0) {
      const rows = await readMeasures(query, {
        ...read,
        name: 'signals.window_agents',
        keys: GROUP_KEYS,
        filters: ['agents'],
        params: { ...params, agents },
      });
      for (const row of rows) found.set(scopeKey({ agentName: String(row.agent_name), windowSeconds }), row);
    }
    return found;
  }

  return {
    /**
     * Each scope's signals over [at − windowSeconds, at) for one project, keyed by scopeKey; scopes without runs
     * read 0. Runs before `retainedFrom` (past the project's retention) are left out of every window.
     */
    async readSignals(
      projectId: string,
      scopes: readonly SignalScope[],
      at: Date,
      retainedFrom = STORABLE_TIMES.from,
    ): Promise<Map<string, SignalReadings>> {
      for (const scope of scopes) {
        if (!Number.isInteger(scope.windowSeconds) || scope.windowSeconds <= 0)
          throw new RangeError(`windowSeconds must be a positive integer: ${scope.windowSeconds}`);
      }
      const startOf = (seconds: number) =>
        retainedPart({ from: new Date(at.getTime() - seconds * 1000), to: at }, retainedFrom).from;
      // A window is long when the summary of that window alone reads rollups: the two read it alike.
      const isLong = ({ windowSeconds }: SignalScope) => {
        const { previous, current } = alone({ from: startOf(windowSeconds), to: at });
        return reportShape(previous, current) === 'rollups';
      };
      const everyUser = scopes.filter((scope) => !scope.userId);
      const found = await readShortWindows(
        projectId,
        everyUser.filter((scope) => !isLong(scope)),
        at,
        startOf,
      );
      // One raw pass more for each user some scopes watch.
      for (const userId of new Set(scopes.flatMap((scope) => (scope.userId ? [scope.userId] : [])))) {
        const ofUser = scopes.filter((scope) => scope.userId === userId);
        for (const [key, row] of await readShortWindows(projectId, ofUser, at, startOf, userId)) found.set(key, row);
      }
      const longWindows = [...new Set(everyUser.filter(isLong).map((scope) => scope.windowSeconds))];
      for (const seconds of longWindows) {
        const ofWindow = everyUser.filter((scope) => scope.windowSeconds === seconds);
        for (const [key, row] of await readLongWindow(projectId, ofWindow, startOf(seconds), at)) found.set(key, row);
      }
      return new Map(scopes.map((scope) => [scopeKey(scope), toReadings(found.get(scopeKey(scope)))]));
    },
  };
}
