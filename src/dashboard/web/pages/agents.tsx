// The health of every agent in the window, sortable; an agent that ran before and not now is marked quiet.
import { useState } from 'preact/hooks';
import type { PageProps } from '../main';
import { get, searchOf } from '../api';
import { Show, WindowPicker } from '../components/ui';
import * as f from '../format';
import { useLoad, useWindow } from '../hooks';
import { href } from '../router';
import type { HealthEntry } from '../types';

const COLUMNS: { field: keyof HealthEntry; label: string; format: (entry: HealthEntry) => string }[] = [
  { field: 'agent_name', label: 'Agent', format: (entry) => entry.agent_name },
  { field: 'total_runs', label: 'Runs', format: (entry) => f.count(entry.total_runs) },
  { field: 'prev_total_runs', label: 'Runs before', format: (entry) => f.count(entry.prev_total_runs) },
  { field: 'completion_rate', label: 'Completion', format: (entry) => f.percent(entry.completion_rate) },
  { field: 'loop_rate', label: 'Loop rate', format: (entry) => f.percent(entry.loop_rate) },
  { field: 'avg_cost_usd', label: 'Avg cost', format: (entry) => f.usd(entry.avg_cost_usd) },
  { field: 'avg_tokens', label: 'Avg tokens', format: (entry) => f.count(entry.avg_tokens) },
];

export const isQuiet = (entry: HealthEntry) => entry.total_runs === 0 && entry.prev_total_runs > 0;

export function AgentsPage({ params, here }: PageProps) {
  const { orgID, projectID } = params;
  const window = useWindow(here.query);
  const health = useLoad(
    () => get<HealthEntry[]>(`/projects/${projectID}/agent/health${searchOf({ from: window.from, to: window.to })}`),
    [projectID, window],
  );
  const [sort, setSort] = useState<{ field: keyof HealthEntry; descending: boolean }>({
    field: 'total_runs',
    descending: true,
  });
  const sorted = (entries: HealthEntry[]) =>
    [...entries].sort((a, b) => {
      const order = a[sort.field] < b[sort.field] ? -1 : a[sort.field] > b[sort.field] ? 1 : 0;
      return sort.descending ? -order : order;
    });
  const runsOf = (agent: string) =>
    href(`/orgs/${orgID}/projects/${projectID}/runs`, {
      window: here.query.get('window'),
      from: here.query.get('from'),
      to: here.query.get('to'),
      agent,
    });
  return (
    <>
      <div class="page-head">
        <h1>Agents</h1>
        <WindowPicker path={here.path} query={here.query} />
      </div>
      <Show loaded={health}>
        {(entries) =>
          entries.length === 0 ? (
            <p class="muted">No agent has runs in this window or the one before it.</p>
          ) : (
            <table class="table">
              <thead>
                <tr>
                  {COLUMNS.map(({ field, label }) => (
                    <th
                      key={field}
                      aria-sort={sort.field === field ? (sort.descending ? 'descending' : 'ascending') : 'none'}
                    >
                      <button
                        type="button"
                        class="link"
                        onClick={() =>
                          setSort({
                            field,
                            descending: sort.field === field ? !sort.descending : field !== 'agent_name',
                          })
                        }
                      >
                        {label}
                        {sort.field === field ? (sort.descending ? ' ↓' : ' ↑') : ''}
                      </button>
                    </th>
                  ))}
                </tr>
              </thead>
              <tbody>
                {sorted(entries).map((entry) => (
                  <tr key={entry.agent_name} class={isQuiet(entry) ? 'quiet' : ''}>
                    {COLUMNS.map(({ field, format }) => (
                      <td key={field}>
                        {field === 'agent_name' ? (
                          <a href={runsOf(entry.agent_name)}>{entry.agent_name}</a>
                        ) : (
                          format(entry)
                        )}
                        {field === 'agent_name' && isQuiet(entry) && (
                          <span class="badge warn" title="ran in the previous window, not in this one">
                            quiet
                          </span>
                        )}
                      </td>
                    ))}
                  </tr>
                ))}
              </tbody>
            </table>
          )
        }
      </Show>
    </>
  );
}
