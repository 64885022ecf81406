// The runs of the window, filtered and paged; and one run with its steps as a timeline.
import type { PageProps } from '../main';
import { get, request, searchOf } from '../api';
import { AgentFilter } from '../components/agent-filter';
import { Options } from '../components/form';
import { Table, type Column } from '../components/table';
import { Show, WindowPicker } from '../components/ui';
import * as f from '../format';
import { useLoad, useWindow } from '../hooks';
import { href, navigate, withChanges } from '../router';
import type { Run, Step } from '../types';

const PAGE_SIZE = 25;
const STATUSES: Run['status'][] = ['running', 'completed', 'failed', 'cancelled', 'timed_out', 'abandoned'];
const readStatus = (status: Run['status']) => status.replace('_', ' ');

const StatusBadge = ({ status }: { status: Run['status'] }) => (
  <span class={`badge status-${status}`}>{readStatus(status)}</span>
);

/** The columns of the runs table; a run's start opens its page, of the project at `projectPath`. */
const runColumns = (projectPath: string): Column<Run>[] => [
  {
    label: 'Started',
    cell: (run) => (
      <a href={href(`${projectPath}/runs/${run.id}`, { timestamp: run.timestamp })}>{f.dateTime(run.timestamp)}</a>
    ),
  },
  { label: 'Agent', cell: (run) => run.agent_name },
  { label: 'Status', cell: (run) => <StatusBadge status={run.status} /> },
  { label: 'Duration', cell: (run) => f.duration(run.duration_ms) },
  { label: 'Steps', cell: (run) => run.total_steps },
  { label: 'Tokens', cell: (run) => f.count(run.total_tokens) },
  { label: 'Cost', cell: (run) => f.usd(run.total_cost_usd) },
  { label: 'Loop', cell: (run) => run.loop_detected && <span class="badge loop">loop</span> },
];

export function RunsPage({ params, here }: PageProps) {
  const { orgID, projectID } = params;
  const window = useWindow(here.query);
  const { query, path } = here;
  const offset = Math.max(0, Number(query.get('offset')) || 0);
  const filters = { agent_name: query.get('agent'), status: query.get('status'), loop_detected: query.get('loop') };
  const search = searchOf({ from: window.from, to: window.to, ...filters, limit: PAGE_SIZE, offset });
  const page = useLoad(async () => {
    const { data, headers } = await request<Run[]>('GET', `/projects/${projectID}/agent/runs${search}`);
    return { runs: data, total: Number(headers.get('X-Total-Count') ?? data.length) };
  }, [projectID, search]);
  const change = (changes: Record<string, string | number | undefined>) =>
    navigate(path, withChanges(query, { offset: undefined, ...changes }));
  return (
    <>
      <div class="page-head">
        <h1>Runs</h1>
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
        <WindowPicker path={path} query={query} />
      </div>
      <Show loaded={page}>
        {({ runs, total }) => (
          <>
            <Table rows={runs} rowKey={(run) => run.id} columns={runColumns(`/orgs/${orgID}/projects/${projectID}`)} />
            {runs.length === 0 && <p class="muted">No run matches these filters in this window.</p>}
            <div class="pager">
              <span class="muted">
                {runs.length === 0
                  ? `${f.count(total)} runs`
                  : `${f.count(offset + 1)}–${f.count(offset + runs.length)} of ${f.count(total)} runs`}
              </span>
              <button
                type="button"
                disabled={offset === 0}
                onClick={() => change({ offset: Math.max(0, offset - PAGE_SIZE) })}
              >
                Newer
              </button>
              <button
                type="button"
                disabled={offset + runs.length >= total}
                onClick={() => change({ offset: offset + PAGE_SIZE })}
              >
                Older
              </button>
            </div>
          </>
        )}
      </Show>
    </>
  );
}

function Timeline({ run, steps }: { run: Run; steps: Step[] }) {
  const start = Date.parse(run.timestamp);
  const ends = steps.map((step) => (step.started_at ? Date.parse(step.started_at) + (step.duration_ms ?? 0) : start));
  const span = Math.max(1, ...ends.map((end) => end - start), run.duration_ms ?? 0);
  return (
    <ol class="timeline">
      {steps.map((step) => {
        const offset = step.started_at ? Date.parse(step.started_at) - start : null;
        const loopStart = run.loop_step_index === step.index;
        return (
          <li
            key={step.index}
            class={`step ${step.error ? 'failed' : ''} ${loopStart ? 'loop-start' : ''}`}
            data-index={step.index}
          >
            <div class="step-head">
              <span class="step-index">#{step.index}</span>
              <span class={`badge type-${step.type}`}>{step.type}</span>
              <strong>{step.tool_name ?? step.model ?? step.name ?? ''}</strong>
              {loopStart && (
                <span class="badge loop" title="the first step of the repeated sequence">
                  loop starts here
                </span>
              )}
              <span class="spacer" />
              {step.tokens !== null && <span>{f.count(step.tokens)} tokens</span>}
              {step.cost_usd !== null && <span>{f.usd(step.cost_usd)}</span>}
              <span>{f.duration(step.duration_ms)}</span>
            </div>
            {offset !== null && (
              <div class="bar" aria-hidden="true">
                <span
                  style={{
                    left: `${(offset / span) * 100}%`,
                    width: `${Math.max(0.5, ((step.duration_ms ?? 0) / span) * 100)}%`,
                  }}
                />
              </div>
            )}
            {(step.input || step.output) && (
              <details>
                <summary>input and output</summary>
                {step.input && <pre>{step.input}</pre>}
                {step.output && <pre>{step.output}</pre>}
              </details>
            )}
            {step.error && <div class="error">{step.error}</div>}
          </li>
        );
      })}
    </ol>
  );
}

export function RunPage({ params, here }: PageProps) {
  const { orgID, projectID, runID } = params;
  const timestamp = here.query.get('timestamp') ?? '';
  const loaded = useLoad(async () => {
    const at = searchOf({ timestamp });
    const [run, steps] = await Promise.all([
      get<Run>(`/projects/${projectID}/agent/runs/${runID}${at}`),
      get<Step[]>(`/projects/${projectID}/agent/runs/${runID}/steps${at}`),
    ]);
    return { run, steps };
  }, [projectID, runID, timestamp]);
  return (
    <Show loaded={loaded}>
      {({ run, steps }) => (
        <>
          <p>
            <a href={href(`/orgs/${orgID}/projects/${projectID}/runs`)}>← Runs</a>
          </p>
          <div class="page-head">
            <h1>{run.agent_name}</h1>
            <StatusBadge status={run.status} />
            {run.loop_detected && <span class="badge loop">loop detected at step #{run.loop_step_index}</span>}
          </div>
          <dl class="facts">
            <dt>Started</dt>
            <dd>{f.dateTime(run.timestamp)}</dd>
            <dt>Duration</dt>
            <dd>{f.duration(run.duration_ms)}</dd>
            <dt>Steps</dt>
            <dd>{run.total_steps}</dd>
            <dt>Tokens</dt>
            <dd>{f.count(run.total_tokens)}</dd>
            <dt>Cost</dt>
            <dd>{f.usd(run.total_cost_usd)}</dd>
            {run.termination_detail && (
              <>
                <dt>Detail</dt>
                <dd>{run.termination_detail}</dd>
              </>
            )}
          </dl>
          {run.input && (
            <>
              <h2>Input</h2>
              <pre>{run.input}</pre>
            </>
          )}
          {run.output && (
            <>
              <h2>Output</h2>
              <pre>{run.output}</pre>
            </>
          )}
          <h2>Steps</h2>
          {steps.length === 0 ? <p class="muted">This run has no steps.</p> : <Timeline run={run} steps={steps} />}
        </>
      )}
    </Show>
  );
}
