// Sessions (contract §10): the conversations of the window, by last run, filtered by agent and user; and one session
// as a timeline of its runs, each with its steps.
import { useEffect, useState } from 'preact/hooks';
import type { PageProps } from '../main';
import { get, request, searchOf } from '../api';
import { AgentFilter } from '../components/agent-filter';
import { Pager } from '../components/pager';
import { Table, type Column } from '../components/table';
import { Show, WindowPicker } from '../components/ui';
import * as f from '../format';
import { useDebounced, useLoad, useWindow } from '../hooks';
import { href, navigate, withChanges } from '../router';
import type { Run, Session, Step } from '../types';
import { Timeline } from './run';
import { StatusBadge } from './runs';
import '../components/scores.css';

const PAGE_SIZE = 25;
const NO_SESSIONS =
  'No session in this window. Runs join a session when they carry a session_id ' +
  '(or, over OpenTelemetry, gen_ai.conversation.id).';

const sessionColumns = (projectPath: string, windowQuery: Record<string, string>): Column<Session>[] => [
  {
    label: 'Session',
    cell: (session) => (
      <a href={href(`${projectPath}/sessions/${encodeURIComponent(session.session_id)}`, windowQuery)}>
        {session.session_id}
      </a>
    ),
  },
  { label: 'Last run', cell: (session) => f.dateTime(session.last_run_at) },
  { label: 'Users', cell: (session) => session.user_ids.join(', ') },
  { label: 'Agents', cell: (session) => session.agents.join(', ') },
  { label: 'Runs', cell: (session) => f.count(session.total_runs) },
  {
    label: 'Outcome',
    cell: (session) => (
      <>
        {session.running_runs > 0 && <span class="badge status-running">{session.running_runs} running</span>}
        {session.failed_runs > 0 && <span class="badge status-failed">{session.failed_runs} failed</span>}
        {session.loop_runs > 0 && <span class="badge loop">{session.loop_runs} looped</span>}
        {session.running_runs + session.failed_runs + session.loop_runs === 0 && (
          <span class="badge status-completed">all completed</span>
        )}
      </>
    ),
  },
  { label: 'Duration', cell: (session) => f.duration(session.duration_ms) },
  { label: 'Tokens', cell: (session) => f.count(session.total_tokens) },
  { label: 'Cost', cell: (session) => f.usd(session.total_cost_usd) },
];

/** A free-text filter kept in the URL, applied once typing pauses. */
function TextFilter({
  label,
  name,
  path,
  query,
}: {
  label: string;
  name: string;
  path: string;
  query: URLSearchParams;
}) {
  const [value, setValue] = useState(query.get(name) ?? '');
  const settled = useDebounced(value, 400);
  useEffect(() => {
    if (settled !== (query.get(name) ?? '')) navigate(path, withChanges(query, { [name]: settled, offset: undefined }));
  }, [settled]);
  return (
    <input
      class="filter-input"
      aria-label={label}
      placeholder={label}
      value={value}
      onInput={(event) => setValue(event.currentTarget.value)}
    />
  );
}

export function SessionsPage({ params, here }: PageProps) {
  const { orgID, projectID } = params;
  const window = useWindow(here.query);
  const { query, path } = here;
  const offset = Math.max(0, Number(query.get('offset')) || 0);
  const filters = { agent_name: query.get('agent'), user_id: query.get('user') };
  const search = searchOf({ from: window.from, to: window.to, ...filters, limit: PAGE_SIZE, offset });
  const page = useLoad(async () => {
    const { data, headers } = await request<Session[]>('GET', `/projects/${projectID}/agent/sessions${search}`);
    return { sessions: data, total: Number(headers.get('X-Total-Count') ?? data.length) };
  }, [projectID, search]);
  const windowQuery = { from: window.from, to: window.to };
  const move = (to: number) => navigate(path, withChanges(query, { offset: to }));
  return (
    <>
      <div class="page-head">
        <h1>Sessions</h1>
        <AgentFilter projectID={projectID} path={path} query={query} window={window} />
        <TextFilter label="User" name="user" path={path} query={query} />
        <WindowPicker path={path} query={query} />
      </div>
      <Show loaded={page}>
        {({ sessions, total }) => (
          <>
            <Table
              rows={sessions}
              rowKey={(session) => session.session_id}
              columns={sessionColumns(`/orgs/${orgID}/projects/${projectID}`, windowQuery)}
              empty={NO_SESSIONS}
            />
            <Pager
              offset={offset}
              shown={sessions.length}
              total={total}
              pageSize={PAGE_SIZE}
              noun="sessions"
              move={move}
            />
          </>
        )}
      </Show>
    </>
  );
}

/** One run of a session on the session's time axis; its steps open beneath it. */
function SessionRun({ run, start, span, runHref }: { run: Run; start: number; span: number; runHref: string }) {
  const [open, setOpen] = useState(false);
  const offset = Date.parse(run.timestamp) - start;
  const length = run.duration_ms ?? Math.max(0, Date.now() - Date.parse(run.timestamp));
  return (
    <li class="session-run" data-run={run.id}>
      <div class="run-head">
        <a href={runHref}>{f.dateTime(run.timestamp)}</a>
        <strong>{run.agent_name}</strong>
        <StatusBadge status={run.status} />
        {run.loop_detected && <span class="badge loop">loop</span>}
        {run.user_id && <span class="muted">{run.user_id}</span>}
        <span class="spacer" />
        <span>{run.total_steps} steps</span>
        <span>{f.count(run.total_tokens)} tokens</span>
        <span>{f.usd(run.total_cost_usd)}</span>
        <span>{f.duration(run.duration_ms)}</span>
      </div>
      <div class="bar" aria-hidden="true">
        <span
          class={`status-${run.status}`}
          style={{ left: `${(offset / span) * 100}%`, width: `${Math.max(0.5, (length / span) * 100)}%` }}
        />
      </div>
      <details onToggle={(event) => setOpen((event.currentTarget as HTMLDetailsElement).open)}>
        <summary>steps</summary>
        {open && <RunSteps run={run} />}
      </details>
    </li>
  );
}

function RunSteps({ run }: { run: Run }) {
  const steps = useLoad(
    () =>
      get<Step[]>(`/projects/${run.project_id}/agent/runs/${run.id}/steps${searchOf({ timestamp: run.timestamp })}`),
    [run.id],
  );
  return (
    <div class="run-steps">
      <Show loaded={steps}>
        {(rows) => (rows.length === 0 ? <p class="muted">No steps.</p> : <Timeline run={run} steps={rows} />)}
      </Show>
    </div>
  );
}

export function SessionPage({ params, here }: PageProps) {
  const { orgID, projectID, sessionID } = params;
  const window = useWindow(here.query);
  const search = searchOf({ from: window.from, to: window.to });
  const loaded = useLoad(async () => {
    const { data, headers } = await request<{ session: Session; runs: Run[] }>(
      'GET',
      `/projects/${projectID}/agent/sessions/${encodeURIComponent(sessionID)}${search}`,
    );
    return { ...data, total: Number(headers.get('X-Total-Count') ?? data.runs.length) };
  }, [projectID, sessionID, search]);
  const projectPath = `/orgs/${orgID}/projects/${projectID}`;
  return (
    <Show loaded={loaded}>
      {({ session, runs, total }) => {
        const start = Date.parse(session.first_run_at);
        const span = Math.max(1, session.duration_ms);
        return (
          <>
            <p>
              <a href={href(`${projectPath}/sessions`, { from: window.from, to: window.to })}>← Sessions</a>
            </p>
            <div class="page-head">
              <h1>Session {session.session_id}</h1>
              {session.running_runs > 0 && <span class="badge status-running">running</span>}
              <WindowPicker path={here.path} query={here.query} />
            </div>
            <dl class="facts">
              <dt>Users</dt>
              <dd>{session.user_ids.join(', ') || '—'}</dd>
              <dt>Agents</dt>
              <dd>{session.agents.join(', ')}</dd>
              <dt>From</dt>
              <dd>{f.dateTime(session.first_run_at)}</dd>
              <dt>Duration</dt>
              <dd>{f.duration(session.duration_ms)}</dd>
              <dt>Runs</dt>
              <dd>
                {f.count(session.total_runs)} ({f.count(session.completed_runs)} completed,{' '}
                {f.count(session.failed_runs)} failed, {f.count(session.running_runs)} running)
              </dd>
              <dt>Steps</dt>
              <dd>{f.count(session.total_steps)}</dd>
              <dt>Tokens</dt>
              <dd>{f.count(session.total_tokens)}</dd>
              <dt>Cost</dt>
              <dd>{f.usd(session.total_cost_usd)}</dd>
            </dl>
            <h2>Runs</h2>
            {total > runs.length && (
              <p class="muted">
                The first {f.count(runs.length)} of {f.count(total)} runs.
              </p>
            )}
            <ol class="session-runs">
              {runs.map((run) => (
                <SessionRun
                  key={run.id}
                  run={run}
                  start={start}
                  span={span}
                  runHref={href(`${projectPath}/runs/${run.id}`, { timestamp: run.timestamp })}
                />
              ))}
            </ol>
          </>
        );
      }}
    </Show>
  );
}
