// One run: what it was asked and answered (chat messages as a conversation), how it ended and why, which loop rule
// its steps matched, and its steps as a timeline whose inputs and outputs open one by one or all at once.
import { useState } from 'preact/hooks';
import { detectLoop, type LoopRule } from '../../../ingest/loops';
import type { PageProps } from '../main';
import { get, searchOf } from '../api';
import { TextView } from '../components/conversation';
import { CopyButton, Show } from '../components/ui';
import * as f from '../format';
import { useLoad } from '../hooks';
import { href } from '../router';
import { pageSettings, type LoopThresholds } from '../settings';
import type { Run, Step } from '../types';
import { StatusBadge } from './runs';
import { RunLabels } from '../components/run-labels';
import { RunScores } from '../components/run-scores';

const TERMINATION_REASONS: Record<NonNullable<Run['termination_reason']>, string> = {
  completed: 'completed',
  error: 'an error',
  loop_detected: 'a loop was detected',
  max_iterations: 'too many iterations',
  timeout: 'timed out',
  budget_exceeded: 'over its budget',
  cancelled: 'cancelled',
  abandoned: 'abandoned (no finish reported in time)',
};

/** What each loop rule (contract §6) looks for, with this deployment's thresholds. */
function describeRule(rule: LoopRule, thresholds: LoopThresholds): string {
  switch (rule) {
    case 'repeat':
      return `the same tool call with the same result ${thresholds.repeat} times in a row`;
    case 'repeated_errors':
      return `the same tool call failing ${thresholds.repeatedErrors} times in a row`;
    case 'cycle':
      return `a cycle of ${thresholds.cyclePeriods.join(' or ')} tool calls repeated ${thresholds.cycleRepeats} times`;
    case 'monologue':
      return `${thresholds.monologue} model calls in a row with the same output`;
  }
}

/** The loop rule the run's steps match, by the service's own detection (ingest/loops.ts) with its thresholds. */
function LoopFact({ run, steps }: { run: Run; steps: Step[] }) {
  if (!run.loop_detected) return null;
  const { rule } = detectLoop(steps, pageSettings.loopThresholds);
  return (
    <>
      <dt>Loop</dt>
      <dd>
        from{' '}
        <button
          type="button"
          class="link"
          onClick={() => document.getElementById(`step-${run.loop_step_index}`)?.scrollIntoView()}
        >
          step #{run.loop_step_index}
        </button>
        {rule && <>: {describeRule(rule, pageSettings.loopThresholds)}</>}
      </dd>
    </>
  );
}

function Facts({ run, steps, sessionHref }: { run: Run; steps: Step[]; sessionHref: (id: string) => string }) {
  const running = run.status === 'running';
  const soFar = running ? ' so far' : '';
  return (
    <dl class="facts">
      <dt>Run id</dt>
      <dd class="run-id">
        <code>{run.id}</code> <CopyButton text={run.id} label="Copy id" />
      </dd>
      <dt>Started (UTC)</dt>
      <dd>{f.dateTime(run.timestamp)}</dd>
      <dt>Finished (UTC)</dt>
      <dd>{running ? 'still running' : f.dateTime(run.finished_at)}</dd>
      <dt>Duration</dt>
      <dd>{f.duration(run.duration_ms)}</dd>
      <dt>Steps</dt>
      <dd>{f.count(run.total_steps)}</dd>
      <dt>Tokens</dt>
      <dd>{`${f.count(run.total_tokens)}${soFar}`}</dd>
      <dt>Cost</dt>
      <dd>{`${f.usd(run.total_cost_usd)}${soFar}`}</dd>
      {run.termination_reason && (
        <>
          <dt>Ended</dt>
          <dd>
            {TERMINATION_REASONS[run.termination_reason]}
            {TERMINATION_REASONS[run.termination_reason] !== run.termination_reason && (
              <code class="muted"> {run.termination_reason}</code>
            )}
          </dd>
        </>
      )}
      {run.termination_detail && (
        <>
          <dt>Detail</dt>
          <dd class="detail">{run.termination_detail}</dd>
        </>
      )}
      <LoopFact run={run} steps={steps} />
      <RunLabels run={run} sessionHref={sessionHref} />
      {run.metadata.length > 0 && (
        <>
          <dt>Metadata</dt>
          <dd>
            <code>{JSON.stringify(run.metadata)}</code>
          </dd>
        </>
      )}
    </dl>
  );
}

function StepItem({
  step,
  run,
  span,
  open,
  toggle,
}: {
  step: Step;
  run: Run;
  span: number;
  open: boolean;
  toggle: () => void;
}) {
  const start = Date.parse(run.timestamp);
  const offset = step.started_at ? Date.parse(step.started_at) - start : null;
  const loopStart = run.loop_step_index === step.index;
  const hasText = Boolean(step.input || step.output);
  return (
    <li
      id={`step-${step.index}`}
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
      {hasText && (
        <details open={open} onToggle={(event) => event.currentTarget.open !== open && toggle()}>
          <summary>input and output</summary>
          {step.input && (
            <div class="io">
              <h4>Input</h4>
              <TextView text={step.input} label={`input of step ${step.index}`} />
            </div>
          )}
          {step.output && (
            <div class="io">
              <h4>Output</h4>
              <TextView text={step.output} label={`output of step ${step.index}`} />
            </div>
          )}
        </details>
      )}
      {step.error && <div class="error">{step.error}</div>}
    </li>
  );
}

export function Timeline({ run, steps }: { run: Run; steps: Step[] }) {
  const [opened, setOpened] = useState<ReadonlySet<number>>(new Set());
  const start = Date.parse(run.timestamp);
  const ends = steps.map((step) => (step.started_at ? Date.parse(step.started_at) + (step.duration_ms ?? 0) : start));
  const span = Math.max(1, ...ends.map((end) => end - start), run.duration_ms ?? 0);
  const withText = steps.filter((step) => step.input || step.output).map((step) => step.index);
  const allOpen = withText.length > 0 && withText.every((index) => opened.has(index));
  const toggle = (index: number) =>
    setOpened((before) => {
      const after = new Set(before);
      if (!after.delete(index)) after.add(index);
      return after;
    });
  return (
    <>
      {withText.length > 0 && (
        <div class="toolbar">
          <button type="button" onClick={() => setOpened(allOpen ? new Set() : new Set(withText))}>
            {allOpen ? 'Collapse all' : 'Expand all'}
          </button>
        </div>
      )}
      <ol class="timeline">
        {steps.map((step) => (
          <StepItem
            key={step.index}
            step={step}
            run={run}
            span={span}
            open={opened.has(step.index)}
            toggle={() => toggle(step.index)}
          />
        ))}
      </ol>
    </>
  );
}

export function RunPage({ params, here }: PageProps) {
  const { orgID, projectID, runID } = params;
  const timestamp = here.query.get('timestamp') ?? undefined;
  const loaded = useLoad(async () => {
    const runPath = `/projects/${projectID}/agent/runs/${runID}`;
    const stepsOf = (at: string) => get<Step[]>(`${runPath}/steps${searchOf({ timestamp: at })}`);
    // With its start time (from the runs list) both reads go at once; without it (a link from an alert event), the
    // run is found by its id first, and its steps by its start.
    if (timestamp) {
      const [run, steps] = await Promise.all([get<Run>(`${runPath}${searchOf({ timestamp })}`), stepsOf(timestamp)]);
      return { run, steps };
    }
    const run = await get<Run>(runPath);
    return { run, steps: await stepsOf(run.timestamp) };
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
          <Facts
            run={run}
            steps={steps}
            sessionHref={(id) => href(`/orgs/${orgID}/projects/${projectID}/sessions/${id}`)}
          />
          <RunScores projectID={projectID} runID={run.id} timestamp={run.timestamp} />
          {run.input && (
            <>
              <h2>Input</h2>
              <TextView text={run.input} label="run input" />
            </>
          )}
          {run.output && (
            <>
              <h2>Output</h2>
              <TextView text={run.output} label="run output" />
            </>
          )}
          <h2>Steps</h2>
          {steps.length === 0 ? <p class="muted">This run has no steps.</p> : <Timeline run={run} steps={steps} />}
        </>
      )}
    </Show>
  );
}
