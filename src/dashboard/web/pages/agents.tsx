// The health of every agent in the window, sortable, with the trends a team watches: p95 duration and failure rate
// against the window before, and their buckets. An agent that ran before and not now is marked quiet.
import { useState } from 'preact/hooks';
import type { PageProps } from '../main';
import { get, request, searchOf } from '../api';
import { Sparkline } from '../components/sparkline';
import { LoadedTable, type Column, type Sort } from '../components/table';
import { WindowPicker } from '../components/ui';
import * as f from '../format';
import { useLoad, useWindow } from '../hooks';
import { href } from '../router';
import type { HealthEntry, Summary, SummaryEntry, Timeseries, Usage } from '../types';
import type { Window } from '../window';

/** The agents whose trends are read (two calls each), the busiest first: the rest show their health alone. */
const MAX_DETAILED = 20;

interface Trends {
  current: SummaryEntry;
  previous: SummaryEntry;
  /** Failure rates of the two windows; null where no run finished (percentiles have no value there either). */
  failure: { current: number | null; previous: number | null };
  buckets: Timeseries['buckets'];
}
interface AgentRow extends HealthEntry {
  spend: number | undefined;
  trends: Trends | undefined;
}

export const isQuiet = (entry: HealthEntry) => entry.total_runs === 0 && entry.prev_total_runs > 0;

/**
 * Finished runs not completed, over finished runs (the failure_rate signal): 1 − completion rate once a run
 * completed; with none completed, all finished ones failed, if any finished — `running` says how many did not.
 */
function failureRate(entry: SummaryEntry, running: number): number | null {
  if (entry.completed_runs > 0) return 1 - entry.completion_rate;
  return entry.total_runs - running > 0 ? 1 : null;
}

async function runningRuns(projectID: string, agent: string, from: string, to: string): Promise<number> {
  const query = searchOf({ from, to, agent_name: agent, status: 'running', limit: 1 });
  const { headers } = await request<unknown[]>('GET', `/projects/${projectID}/agent/runs${query}`);
  return Number(headers.get('X-Total-Count') ?? 0);
}

async function trendsOf(projectID: string, agent: string, window: Window): Promise<Trends> {
  const query = searchOf({ from: window.from, to: window.to, agent_name: agent });
  const [summary, series] = await Promise.all([
    get<Summary>(`/projects/${projectID}/agent/summary${query}`),
    get<Timeseries>(`/projects/${projectID}/agent/timeseries${query}`),
  ]);
  // Only an agent with runs but no completed one needs its running runs counted (rarely).
  const previousFrom = new Date(2 * Date.parse(window.from) - Date.parse(window.to)).toISOString();
  const [running, runningBefore] = await Promise.all([
    summary.current.completed_runs > 0 ? 0 : runningRuns(projectID, agent, window.from, window.to),
    summary.previous.completed_runs > 0 ? 0 : runningRuns(projectID, agent, previousFrom, window.from),
  ]);
  return {
    ...summary,
    failure: { current: failureRate(summary.current, running), previous: failureRate(summary.previous, runningBefore) },
    buckets: series.buckets,
  };
}

/** The agents' health and spend: the table, at once. */
async function loadAgents(projectID: string, window: Window): Promise<AgentRow[]> {
  const range = searchOf({ from: window.from, to: window.to });
  const [health, usage] = await Promise.all([
    get<HealthEntry[]>(`/projects/${projectID}/agent/health${range}`),
    get<Usage>(`/projects/${projectID}/agent/usage${searchOf({ from: window.from, to: window.to, by: 'agent' })}`),
  ]);
  const spend = new Map(usage.groups.map((group) => [group.name, group.cost_usd]));
  // An agent past the 20 that spent most is in `others`: its spend is not known here.
  return health.map((entry) => ({
    ...entry,
    spend: spend.get(entry.agent_name) ?? (usage.others ? undefined : 0),
    trends: undefined,
  }));
}

/** The busiest agents' trends, by name: they fill the table in once read. */
async function loadTrends(projectID: string, agents: readonly AgentRow[], window: Window) {
  const busiest = agents.slice(0, MAX_DETAILED).map((agent) => agent.agent_name);
  const trends = await Promise.all(busiest.map((agent) => trendsOf(projectID, agent, window)));
  return new Map(busiest.map((agent, i) => [agent, trends[i]]));
}

/** A value with its change against the previous window, colored when the change is bad or good. */
function Trend({
  value,
  previous,
  read,
  change,
  upIsGood,
  line,
  label,
}: {
  value: number | null;
  previous: number | null;
  read: (value: number) => string;
  change: (current: number, previous: number) => string;
  upIsGood: boolean;
  line: (number | null)[];
  label: string;
}) {
  if (value === null) return <span class="muted">—</span>;
  const compared = previous !== null && previous !== value;
  const better = compared && value > previous === upIsGood;
  return (
    <span class="trend">
      <span>{read(value)}</span>
      <span class={`trend-change ${compared ? (better ? 'good' : 'bad') : 'muted'}`}>
        {previous === null ? 'no runs before' : compared ? change(value, previous) : '±0'}
      </span>
      <Sparkline values={line} label={label} />
    </span>
  );
}

/** A column of a number the health report measures, shown by `format` and sorted by its value. */
const measure = (
  field: Exclude<keyof HealthEntry, 'agent_name'>,
  label: string,
  format: (value: number) => string,
): Column<AgentRow> => ({
  label,
  value: (entry) => entry[field],
  cell: (entry) => format(entry[field]),
});

const bucketsOf = (row: AgentRow, read: (bucket: Timeseries['buckets'][number]) => number | null) =>
  (row.trends?.buckets ?? []).map((bucket) => (bucket.total_runs === 0 ? null : read(bucket)));

const TREND_COLUMNS: Column<AgentRow>[] = [
  {
    label: 'Failure rate',
    value: (row) => row.trends?.failure.current ?? -1,
    cell: (row) =>
      row.trends ? (
        <Trend
          value={row.trends.failure.current}
          previous={row.trends.failure.previous}
          read={f.percent}
          change={(current, previous) => f.delta(current, previous, 'points')}
          upIsGood={false}
          line={bucketsOf(row, (bucket) => (bucket.completed_runs > 0 ? 1 - bucket.completion_rate : null))}
          label={`failure rate of ${row.agent_name} over the window`}
        />
      ) : (
        <span class="muted">…</span>
      ),
  },
  {
    label: 'p95 duration',
    value: (row) => row.trends?.current.duration_p95_ms ?? -1,
    cell: (row) =>
      row.trends ? (
        <Trend
          value={row.trends.failure.current === null ? null : row.trends.current.duration_p95_ms}
          previous={row.trends.failure.previous === null ? null : row.trends.previous.duration_p95_ms}
          read={f.duration}
          change={(current, previous) => f.delta(current, previous, 'relative')}
          upIsGood={false}
          line={bucketsOf(row, (bucket) => bucket.duration_p95_ms)}
          label={`p95 duration of ${row.agent_name} over the window`}
        />
      ) : (
        <span class="muted">…</span>
      ),
  },
];

export function AgentsPage({ params, here }: PageProps) {
  const { orgID, projectID } = params;
  const window = useWindow(here.query);
  const health = useLoad(() => loadAgents(projectID, window), [projectID, window]);
  const trends = useLoad(
    () => (health.data ? loadTrends(projectID, health.data, window) : Promise.resolve(undefined)),
    [health.data],
  );
  const agents = {
    ...health,
    data: health.data?.map((row) => ({ ...row, trends: trends.data?.get(row.agent_name) })),
  };
  const [sort, setSort] = useState<Sort>({ label: 'Runs', descending: true });
  const runsOf = (agent: string) =>
    href(`/orgs/${orgID}/projects/${projectID}/runs`, {
      window: here.query.get('window'),
      from: here.query.get('from'),
      to: here.query.get('to'),
      agent,
    });
  const agent: Column<AgentRow> = {
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
        loaded={agents}
        class="agents"
        rowKey={(entry) => entry.agent_name}
        rowClass={(entry) => (isQuiet(entry) ? 'quiet' : '')}
        empty="No agent has runs in this window or the one before it."
        columns={[
          agent,
          measure('total_runs', 'Runs', f.count),
          measure('prev_total_runs', 'Runs before', f.count),
          ...TREND_COLUMNS,
          measure('completion_rate', 'Completion', f.percent),
          measure('loop_rate', 'Loop rate', f.percent),
          measure('avg_cost_usd', 'Avg cost', f.usd),
          {
            label: 'Spend',
            value: (row) => row.spend ?? -1,
            cell: (row) => (row.spend === undefined ? '—' : f.usd(row.spend)),
          },
        ]}
        sort={sort}
        onSort={setSort}
      />
      <p class="muted">
        Failure rate: finished runs that did not complete. Trends: the change from the window before, and the
        window&apos;s buckets
        {agents.data && agents.data.length > MAX_DETAILED ? ` (for the ${MAX_DETAILED} busiest agents)` : ''}.
      </p>
    </>
  );
}
