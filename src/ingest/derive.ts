// Derives what a run carries from its steps: totals, tool use and loops; and turns inputs into stored rows.
import { fromClickHouseTime, toClickHouseTime } from '../db/clickhouse';
import { DEFAULT_TERMINATION_REASON, type Step } from '../runs/model';
import type { FinishedRunRow, LiveRunRow, RunLabels, RunTotals, StepRow } from '../runs/tables';
import type { PriceTable } from '../pricing/prices';
import { detectLoop, type LoopThresholds } from './loops';
import type { FinishInput, StepInput } from './schemas';

let lastVersion = 0;

/** Increasing row versions for ReplacingMergeTree: the latest write of a key wins. */
export function nextVersion(): number {
  lastVersion = Math.max(lastVersion + 1, Date.now() * 1000);
  return lastVersion;
}

/** A step as the ingest paths hand it over: OTLP also knows how many input tokens came from the provider's cache. */
export type StepFields = StepInput & { cached_input_tokens?: number };

/**
 * What an llm step cost: as sent, else priced from its model and token counts (contract §4), else unknown. A model
 * the table does not know costs 0.
 */
function costOf(step: Omit<StepFields, 'index'>, prices: PriceTable): number | null {
  if (step.cost_usd !== undefined && step.cost_usd !== null) return step.cost_usd;
  const inputTokens = step.input_tokens ?? 0;
  const outputTokens = step.output_tokens ?? 0;
  if (step.type !== 'llm' || !step.model || inputTokens + outputTokens === 0) return null;
  return prices.costOf(step.model, { inputTokens, outputTokens, cachedInputTokens: step.cached_input_tokens });
}

/** The total tokens of a step: as sent, else the sum of its input and output tokens when either was sent. */
function tokensOf(step: Omit<StepFields, 'index'>): number | null {
  if (step.tokens !== undefined && step.tokens !== null) return step.tokens;
  if (step.input_tokens === undefined && step.output_tokens === undefined) return null;
  return (step.input_tokens ?? 0) + (step.output_tokens ?? 0);
}

/**
 * A step's row; `runTimestamp` is the run's start in ClickHouse's text, converted once for all of a run's steps.
 * `index` is the step's own, unless given (steps assembled from spans are indexed by their order).
 */
export function toStepRow(
  projectId: string,
  runId: string,
  runTimestamp: string,
  step: Omit<StepFields, 'index'> & { index?: number },
  version: number,
  prices: PriceTable,
  index = step.index!,
): StepRow {
  return {
    project_id: projectId,
    run_timestamp: runTimestamp,
    run_id: runId,
    index,
    version,
    type: step.type,
    name: step.name ?? null,
    tool_name: step.tool_name ?? null,
    model: step.model ?? null,
    input: step.input ?? '',
    output: step.output ?? '',
    tokens: tokensOf(step),
    input_tokens: step.input_tokens ?? null,
    output_tokens: step.output_tokens ?? null,
    cost_usd: costOf(step, prices),
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

type CountedStep = Pick<
  StepRow,
  'index' | 'type' | 'tool_name' | 'model' | 'input' | 'output' | 'error' | 'tokens' | 'cost_usd'
>;

/** Totals of a run's steps; a loop found earlier keeps its first index (it never moves). */
export function totalsOf(
  steps: readonly CountedStep[],
  earlierLoopIndex: number | null,
  thresholds: LoopThresholds,
): RunTotals {
  const toolSteps = steps.filter((step) => step.type === 'tool');
  const loop =
    earlierLoopIndex === null ? detectLoop(steps, thresholds) : { loopDetected: true, loopStepIndex: earlierLoopIndex };
  return {
    loop_detected: loop.loopDetected,
    loop_step_index: loop.loopStepIndex,
    total_steps: steps.length,
    total_tokens: steps.reduce((sum, step) => sum + Number(step.tokens ?? 0), 0),
    total_cost_usd: steps.reduce((sum, step) => sum + Number(step.cost_usd ?? 0), 0),
    tool_calls: toolSteps.length,
    tool_names: [...new Set(toolSteps.map((step) => step.tool_name ?? ''))],
    models: [...new Set(steps.flatMap((step) => (step.type === 'llm' && step.model ? [step.model] : [])))],
  };
}

/** The labels a call sends (contract §10): each may be left out. */
export type SentLabels = Partial<{ session_id: string; user_id: string; tags: string[] }>;

/** Tags without repeats, in the order first sent. */
export const distinctTags = (tags: readonly string[]): string[] => [...new Set(tags)];

/**
 * Why a finish's labels cannot apply to the run: an id the run has already, sent with another value (it never
 * changes). Undefined when they can.
 */
export function labelConflict(run: RunLabels, sent: SentLabels): string | undefined {
  for (const field of ['session_id', 'user_id'] as const) {
    const value = sent[field];
    if (value !== undefined && run[field] !== '' && run[field] !== value)
      return `the run's ${field} is ${JSON.stringify(run[field])}; a set ${field} never changes`;
  }
  return undefined;
}

/** A run's labels with a finish's added: an id the run left empty is set, tags add up. */
export function labelsAfter(run: RunLabels, sent: SentLabels): RunLabels {
  return {
    session_id: run.session_id || sent.session_id || '',
    user_id: run.user_id || sent.user_id || '',
    tags: sent.tags === undefined ? run.tags : distinctTags([...run.tags, ...sent.tags]),
  };
}

/** A run's live row: its start fields and its totals so far. Fields are listed, not spread: every start builds one. */
export function liveRowOf(
  projectId: string,
  id: string,
  timestamp: string,
  start: { agent_name: string; input?: string; metadata?: number[] } & SentLabels,
  totals: RunTotals,
): LiveRunRow {
  return {
    project_id: projectId,
    timestamp,
    id,
    version: 0,
    finished: 0,
    agent_name: start.agent_name,
    input: start.input ?? '',
    metadata: start.metadata ?? [],
    loop_detected: totals.loop_detected,
    loop_step_index: totals.loop_step_index,
    total_steps: totals.total_steps,
    total_tokens: totals.total_tokens,
    total_cost_usd: totals.total_cost_usd,
    tool_calls: totals.tool_calls,
    tool_names: totals.tool_names,
    models: totals.models,
    session_id: start.session_id ?? '',
    user_id: start.user_id ?? '',
    tags: start.tags === undefined ? [] : distinctTags(start.tags),
  };
}

/** How a run ended: a finish call's fields, or the abandon job's bare status. */
export type RunEnding = Partial<Omit<FinishInput, 'timestamp' | 'steps' | 'status'>> & {
  status: FinishedRunRow['status'];
};

/**
 * The one row a run gets in `runs`: what it carried while live (or in its batch item), its totals and how it ended.
 * Fields are listed, not spread: batches build a thousand of these per call, and spreads are the slow path.
 */
export function finishedRowOf(
  live: LiveRunRow,
  totals: RunTotals,
  ending: RunEnding,
  finishedAt: Date,
  startedAt = fromClickHouseTime(live.timestamp),
): FinishedRunRow {
  const labels = labelsAfter(live, ending);
  return {
    project_id: live.project_id,
    timestamp: live.timestamp,
    id: live.id,
    agent_name: live.agent_name,
    input: live.input,
    metadata: ending.metadata ?? live.metadata,
    loop_detected: totals.loop_detected,
    loop_step_index: totals.loop_step_index,
    total_steps: totals.total_steps,
    total_tokens: ending.total_tokens ?? totals.total_tokens,
    total_cost_usd: ending.total_cost_usd ?? totals.total_cost_usd,
    tool_calls: totals.tool_calls,
    tool_names: totals.tool_names,
    models: totals.models,
    status: ending.status,
    finished_at: toClickHouseTime(finishedAt),
    duration_ms: finishedAt.getTime() - startedAt.getTime(),
    output: ending.output ?? '',
    termination_reason: ending.termination_reason ?? DEFAULT_TERMINATION_REASON[ending.status],
    termination_detail: ending.termination_detail ?? '',
    session_id: labels.session_id,
    user_id: labels.user_id,
    tags: labels.tags,
  };
}
