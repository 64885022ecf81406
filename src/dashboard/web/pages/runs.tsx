// The runs of the window: filtered, sorted, paged; each with what it was asked, how it went, what it cost.
import { useState } from 'preact/hooks';
import type { PageProps } from '../main';
import { request, searchOf } from '../api';
import { AgentFilter } from '../components/agent-filter';
import { Options } from '../components/form';
import { Table, type Column, type Sort } from '../components/table';
import { Show, WindowPicker } from '../components/ui';
import * as f from '../format';
import { useLoad, useWindow } from '../hooks';
import { previewOf } from '../messages';
import { href, navigate, withChanges } from '../router';
import type { Run } from '../types';
import { Pager } from '../components/pager';
import { ExportMenu, FilterChips, SearchBox, searchParamsOf } from '../components/run-search';

const PAGE_SIZE = 25;
const STATUSES: Run['status'][] = ['running', 'completed', 'failed', 'cancelled', 'timed_out', 'abandoned'];
export const readStatus = (status: Run['status']) => status.replace('_', ' ');

export const StatusBadge = ({ status }: { status: Run['status'] }) => (
  <span class={`badge status-${status}`}>{readStatus(status)}</span>
);

/** A run's figure, or "—" while it runs: its duration, tokens and cost are not known until it finishes. */
const finished = (run: Run, read: (run: Run) => string) => (run.status === 'running' ? '—' : read(run));

/** The columns of the runs table; a run's start opens its page, of the project at `projectPath`. */
const runColumns = (projectPath: string): Column<Run>[] => [
  {
    label: 'Started (UTC)',
    value: (run) => run.timestamp,
    cell: (run) => (
      <a href={href(`${projectPath}/runs/${run.id}`, { timestamp: run.timestamp })}>{f.dateTime(run.timestamp)}</a>
    ),
  },
  { label: 'Agent', value: (run) => run.agent_name, cell: (run) => run.agent_name },
  {
    label: 'Input',
    value: (run) => previewOf(run.input),
    cell: (run) => (
      <span class="preview-text" title={f.clip(previewOf(run.input), 500)}>
        {run.input ? f.clip(previewOf(run.input), 80) : <span class="muted">—</span>}
      </span>
    ),
  },
  { label: 'Status', value: (run) => run.status, cell: (run) => <StatusBadge status={run.status} /> },
  {
    label: 'Duration',
    value: (run) => run.duration_ms ?? -1,
    cell: (run) => finished(run, ({ duration_ms }) => f.duration(duration_ms)),
  },
  { label: 'Steps', value: (run) => run.total_steps, cell: (run) => f.count(run.total_steps) },
  {
    label: 'Tokens',
    value: (run) => run.total_tokens,
    cell: (run) => finished(run, ({ total_tokens }) => f.count(total_tokens)),
  },
  {
    label: 'Cost',
    value: (run) => run.total_cost_usd,
    cell: (run) => finished(run, ({ total_cost_usd }) => f.usd(total_cost_usd)),
  },
  {
    label: 'Loop',
    value: (run) => Number(run.loop_detected),
    cell: (run) => run.loop_detected && <span class="badge loop">loop</span>,
  },
];

/**
 * The list's filters chosen in the page head, each a query parameter of the page and of the API (the page's name
 * shorter); the search's (run-search.tsx) keep the API's names.
 */
const FILTERS = { agent_name: 'agent', status: 'status', loop_detected: 'loop' } as const;

export function RunsPage({ params, here }: PageProps) {
  const { orgID, projectID } = params;
  const window = useWindow(here.query);
  const { query, path } = here;
  const offset = Math.max(0, Number(query.get('offset')) || 0);
  const filters = Object.fromEntries(
    Object.entries(FILTERS).map(([api, page]) => [api, query.get(page) ?? undefined]),
  ) as Record<keyof typeof FILTERS, string | undefined>;
  // What the page lists, as the API's parameters: the export downloads the same, every page of it.
  const listed: [string, string][] = [
    ...new URLSearchParams(searchOf({ from: window.from, to: window.to, ...filters })),
    ...searchParamsOf(query),
  ];
  const search = `?${new URLSearchParams([...listed, ['limit', String(PAGE_SIZE)], ['offset', String(offset)]])}`;
  const page = useLoad(async () => {
    const { data, headers } = await request<Run[]>('GET', `/projects/${projectID}/agent/runs${search}`);
    return { runs: data, total: Number(headers.get('X-Total-Count') ?? data.length) };
  }, [projectID, search]);
  // Newest first, as the API lists them; another order sorts the page shown.
  const [sort, setSort] = useState<Sort>({ label: 'Started (UTC)', descending: true });
  const change = (changes: Record<string, string | number | undefined>) =>
    navigate(path, withChanges(query, { offset: undefined, ...changes }));
  return (
    <>
      <div class="page-head">
        <h1>Runs</h1>
        <div class="filters" role="group" aria-label="Filters">
          <AgentFilter projectID={projectID} path={path} query={query} window={window} />
          <select
            aria-label="Status"
            value={filters.status ?? ''}
            onChange={(e) => change({ status: e.currentTarget.value })}
          >
            <option value="">Any status</option>
            <Options choices={STATUSES.map((status) => ({ value: status, label: readStatus(status) }))} />
          </select>
          <select
            aria-label="Loops"
            value={filters.loop_detected ?? ''}
            onChange={(e) => change({ loop: e.currentTarget.value })}
          >
            <option value="">Loops or not</option>
            <option value="true">Loop detected</option>
            <option value="false">No loop</option>
          </select>
        </div>
        <WindowPicker path={path} query={query} />
        <ExportMenu projectID={projectID} params={listed} />
      </div>
      <div class="search-bar">
        <SearchBox key={query.get('q') ?? ''} path={path} query={query} />
        <FilterChips path={path} query={query} />
      </div>
      <Show loaded={page}>
        {({ runs, total }) => (
          <>
            <Table
              class="runs"
              rows={runs}
              rowKey={(run) => run.id}
              columns={runColumns(`/orgs/${orgID}/projects/${projectID}`)}
              sort={sort}
              onSort={setSort}
            />
            {runs.length === 0 && <p class="muted">No run matches these filters in this window.</p>}
            <Pager
              offset={offset}
              shown={runs.length}
              total={total}
              pageSize={PAGE_SIZE}
              noun="runs"
              move={(to) => change({ offset: to })}
            >
              {sort.label !== 'Started (UTC)' && runs.length > 0 && (
                <span class="muted">Sorted by {sort.label.toLowerCase()} within this page; pages go newest first.</span>
              )}
            </Pager>
          </>
        )}
      </Show>
    </>
  );
}
