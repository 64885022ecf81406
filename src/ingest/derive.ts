// Derives what a run carries from its steps: totals, tool use and loops; and turns inputs into stored rows.
import { fromClickHouseTime, toClickHouseTime } from '../db/clickhouse';
import {
  DEFAULT_TERMINATION_REASON,
  type FinishedRunRow, type LiveRunRow, type RunTotals, type Step, type StepRow,
} from '../runs/model';
import { detectLoop, type LoopThresholds } from './loops';
import type { FinishInput, StepInput } from './schemas';

let lastVersion = 0;

/** Increasing row versions for ReplacingMergeTree: the latest write of a key wins. */
export function nextVersion(): number {
  lastVersion = Math.max(lastVersion + 1, Date.now() * 1000);
  return lastVersion;
}

/** A step's row; `runTimestamp` is the run's start in ClickHouse's text, converted once for all of a run's steps. */
export function toStepRow(projectId: string, runId: string, runTimestamp: string, step: StepInput, version: number): StepRow {
  return {
    project_id: projectId,
    run_timestamp: runTimestamp,
    run_id: runId,
    index: step.index,
    version,
    type: step.type,
    name: step.name ?? null,
    tool_name: step.tool_name ?? null,
    model: step.model ?? null,
    input: step.input ?? '',
    output: step.output ?? '',
    tokens: step.tokens ?? null,
    cost_usd: step.cost_usd ?? null,
    started_at: step.started_at ? toClickHouseTime(step.started_at) : null,
    duration_ms: step.duration_ms ?? null,
    error: step.error ?? null,
  };
}

/** Steps by index, the newer of two with the same index winning (re-sending a step replaces it). */
export function mergeSteps<S extends Pick<Step, 'index'>>(existing: readonly S[], incoming: readonly S[]): S[] {
  const byIndex = new Map<number, S>();
  for (const step of [...existing, ...incoming]) byIndex.set(step.index, step);
  return [...byIndex.values()].sort((a, b) => a.index - b.index);
}

type CountedStep = Pick<StepRow, 'index' | 'type' | 'tool_name' | 'input' | 'output' | 'error' | 'tokens' | 'cost_usd'>;

/** Totals of a run's steps; a loop found earlier keeps its first index (it never moves). */
export function totalsOf(steps: readonly CountedStep[], earlierLoopIndex: number | null, thresholds: LoopThresholds): RunTotals {
  const toolSteps = steps.filter((step) => step.type === 'tool');
  const loop = earlierLoopIndex === null ? detectLoop(steps, thresholds) : { loopDetected: true, loopStepIndex: earlierLoopIndex };
  return {
    loop_detected: loop.loopDetected,
    loop_step_index: loop.loopStepIndex,
    total_steps: steps.length,
    total_tokens: steps.reduce((sum, step) => sum + Number(step.tokens ?? 0), 0),
    total_cost_usd: steps.reduce((sum, step) => sum + Number(step.cost_usd ?? 0), 0),
    tool_calls: toolSteps.length,
    tool_names: [...new Set(toolSteps.map((step) => step.tool_name ?? ''))],
  };
}

/** How a run ended: a finish call's fields, or the abandon job's bare status. */
export type Outcome = Partial<Omit<FinishInput, 'timestamp' | 'steps' | 'status'>> & { status: FinishedRunRow['status'] };

/**
 * The one row a run gets in `runs`: what it carried while live (or in its batch item), its totals and its outcome.
 * Fields are listed, not spread: batches build a thousand of these per call, and spreads are the slow path.
 */
export function finishedRowOf(
  live: LiveRunRow, totals: RunTotals, outcome: Outcome, finishedAt: Date, startedAt = fromClickHouseTime(live.timestamp),
): FinishedRunRow {
  return {
    project_id: live.project_id,
    timestamp: live.timestamp,
    id: live.id,
    agent_name: live.agent_name,
    input: live.input,
    metadata: outcome.metadata ?? live.metadata,
    loop_detected: totals.loop_detected,
    loop_step_index: totals.loop_step_index,
    total_steps: totals.total_steps,
    total_tokens: outcome.total_tokens ?? totals.total_tokens,
    total_cost_usd: outcome.total_cost_usd ?? totals.total_cost_usd,
    tool_calls: totals.tool_calls,
    tool_names: totals.tool_names,
    status: outcome.status,
    finished_at: toClickHouseTime(finishedAt),
    duration_ms: finishedAt.getTime() - startedAt.getTime(),
    output: outcome.output ?? '',
    termination_reason: outcome.termination_reason ?? DEFAULT_TERMINATION_REASON[outcome.status],
    termination_detail: outcome.termination_detail ?? '',
  };
}
