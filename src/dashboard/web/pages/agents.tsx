// The health of every agent in the window, sortable; an agent that ran before and not now is marked quiet.
import { useState } from 'preact/hooks';
import type { PageProps } from '../main';
import { get, searchOf } from '../api';
import { LoadedTable, type Column, type Sort } from '../components/table';
import { WindowPicker } from '../components/ui';
import * as f from '../format';
import { useLoad, useWindow } from '../hooks';
import { href } from '../router';
import type { HealthEntry } from '../types';

/** A column of a number the report measures, shown by `format` and sorted by its value. */
const measure = (
  field: Exclude<keyof HealthEntry, 'agent_name'>,
  label: string,
  format: (value: number) => string,
): Column<HealthEntry> => ({
  label,
  value: (entry) => entry[field],
  cell: (entry) => format(entry[field]),
});

const MEASURES = [
  measure('total_runs', 'Runs', f.count),
  measure('prev_total_runs', 'Runs before', f.count),
  measure('completion_rate', 'Completion', f.percent),
  measure('loop_rate', 'Loop rate', f.percent),
  measure('avg_cost_usd', 'Avg cost', f.usd),
  measure('avg_tokens', 'Avg tokens', f.count),
];

export const isQuiet = (entry: HealthEntry) => entry.total_runs === 0 && entry.prev_total_runs > 0;

export function AgentsPage({ params, here }: PageProps) {
  const { orgID, projectID } = params;
  const window = useWindow(here.query);
  const health = useLoad(
    () => get<HealthEntry[]>(`/projects/${projectID}/agent/health${searchOf({ from: window.from, to: window.to })}`),
    [projectID, window],
  );
  const [sort, setSort] = useState<Sort>({ label: 'Runs', descending: true });
  const runsOf = (agent: string) =>
    href(`/orgs/${orgID}/projects/${projectID}/runs`, {
      window: here.query.get('window'),
      from: here.query.get('from'),
      to: here.query.get('to'),
      agent,
    });
  const agent: Column<HealthEntry> = {
    label: 'Agent',
    value: (entry) => entry.agent_name,
    cell: (entry) => (
      <>
        <a href={runsOf(entry.agent_name)}>{entry.agent_name}</a>
        {isQuiet(entry) && (
          <span class="badge warn" title="ran in the previous window, not in this one">
            quiet
          </span>
        )}
      </>
    ),
  };
  return (
    <>
      <div class="page-head">
        <h1>Agents</h1>
        <WindowPicker path={here.path} query={here.query} />
      </div>
      <LoadedTable
        loaded={health}
        rowKey={(entry) => entry.agent_name}
        rowClass={(entry) => (isQuiet(entry) ? 'quiet' : '')}
        empty="No agent has runs in this window or the one before it."
        columns={[agent, ...MEASURES]}
        sort={sort}
        onSort={setSort}
      />
    </>
  );
}
