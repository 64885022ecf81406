// The agent filter: the agents with runs in the window (or the one before), from the health report.
import { get, searchOf } from '../api';
import { useLoad } from '../hooks';
import { navigate, withChanges } from '../router';
import type { HealthEntry } from '../types';
import type { Window } from '../window';
import { Options } from './form';

export function AgentFilter({
  projectID,
  path,
  query,
  window,
}: {
  projectID: string;
  path: string;
  query: URLSearchParams;
  window: Window;
}) {
  const agents = useLoad(
    () => get<HealthEntry[]>(`/projects/${projectID}/agent/health${searchOf({ from: window.from, to: window.to })}`),
    [projectID, window.from, window.to],
  );
  const chosen = query.get('agent') ?? '';
  const names = [
    ...new Set([...(agents.data ?? []).map((entry) => entry.agent_name), ...(chosen ? [chosen] : [])]),
  ].sort();
  return (
    <select
      aria-label="Agent"
      value={chosen}
      onChange={(event) => navigate(path, withChanges(query, { agent: event.currentTarget.value, offset: undefined }))}
    >
      <option value="">All agents</option>
      <Options choices={names} />
    </select>
  );
}
