// The run and step model: API shapes (zod), ClickHouse rows, and the mapping between them.
import { z } from 'zod';
import { fromClickHouseTime } from '../db/clickhouse';
import { count, timestampOut, uuid } from '../http/schemas';

export const FINISHED_STATUSES = ['completed', 'failed', 'cancelled', 'timed_out'] as const;
export const RUN_STATUSES = ['running', ...FINISHED_STATUSES, 'abandoned'] as const;
export const TERMINATION_REASONS = [
  'completed',
  'error',
  'loop_detected',
  'max_iterations',
  'timeout',
  'budget_exceeded',
  'cancelled',
  'abandoned',
] as const;
export const STEP_TYPES = ['llm', 'tool', 'retrieval', 'other'] as const;

export type RunStatus = (typeof RUN_STATUSES)[number];
export type FinishedStatus = (typeof FINISHED_STATUSES)[number];
export type TerminationReason = (typeof TERMINATION_REASONS)[number];

export const DEFAULT_TERMINATION_REASON: Record<FinishedStatus | 'abandoned', TerminationReason> = {
  completed: 'completed',
  failed: 'error',
  cancelled: 'cancelled',
  timed_out: 'timeout',
  abandoned: 'abandoned',
};

export const runSchema = z
  .object({
    id: uuid,
    project_id: uuid,
    agent_name: z.string(),
    status: z.enum(RUN_STATUSES),
    timestamp: timestampOut,
    finished_at: timestampOut.nullable(),
    duration_ms: count.nullable(),
    input: z.string(),
    output: z.string(),
    loop_detected: z.boolean(),
    loop_step_index: count.nullable(),
    termination_reason: z.enum(TERMINATION_REASONS).nullable(),
    termination_detail: z.string().nullable(),
    total_steps: count,
    total_tokens: count,
    total_cost_usd: z.number(),
    metadata: z.array(z.number()),
  })
  .meta({ id: 'Run' });
export type Run = z.infer<typeof runSchema>;

export const stepOutSchema = z
  .object({
    index: count,
    type: z.enum(STEP_TYPES),
    name: z.string().nullable(),
    tool_name: z.string().nullable(),
    model: z.string().nullable(),
    input: z.string(),
    output: z.string(),
    tokens: count.nullable(),
    input_tokens: count.nullable(),
    output_tokens: count.nullable(),
    cost_usd: z.number().nullable(),
    started_at: timestampOut.nullable(),
    duration_ms: count.nullable(),
    error: z.string().nullable(),
  })
  .meta({ id: 'Step' });
export type Step = z.infer<typeof stepOutSchema>;

/** Totals a run carries, derived from its steps (and loop detection) as they arrive. */
export interface RunTotals {
  loop_detected: boolean;
  loop_step_index: number | null;
  total_steps: number;
  total_tokens: number;
  total_cost_usd: number;
  tool_calls: number;
  tool_names: string[];
}

/** A row of `live_runs`: a run that has started and not (yet) finished. */
export interface LiveRunRow extends RunTotals {
  project_id: string;
  timestamp: string;
  id: string;
  version: number;
  /** 1 on the last version of a run that has finished: `live_runs FINAL` then leaves the run out. */
  finished: 0 | 1;
  agent_name: string;
  input: string;
  metadata: number[];
}

/** The columns every run has, running or finished. */
export type RunColumns = Omit<LiveRunRow, 'version' | 'finished'>;

/** A row of `runs`: a finished run, written once. */
export interface FinishedRunRow extends RunColumns {
  status: Exclude<RunStatus, 'running'>;
  finished_at: string;
  duration_ms: number;
  output: string;
  termination_reason: TerminationReason;
  termination_detail: string;
}

/** A finished run's row that replaces the rows stored for it before: the highest version stays. */
export interface VersionedRunRow extends FinishedRunRow {
  version: number;
}

export interface StepRow {
  project_id: string;
  run_timestamp: string;
  run_id: string;
  index: number;
  version: number;
  type: Step['type'];
  name: string | null;
  tool_name: string | null;
  model: string | null;
  input: string;
  output: string;
  tokens: number | null;
  input_tokens: number | null;
  output_tokens: number | null;
  cost_usd: number | null;
  started_at: string | null;
  duration_ms: number | null;
  error: string | null;
}

const isoFrom = (clickHouseTime: string) => fromClickHouseTime(clickHouseTime).toISOString();

/** Either kind of row, as stored, to the API's run. */
export function toRun(row: RunColumns | FinishedRunRow): Run {
  const finished = 'status' in row ? row : undefined;
  return {
    id: row.id,
    project_id: row.project_id,
    agent_name: row.agent_name,
    status: finished?.status ?? 'running',
    timestamp: isoFrom(row.timestamp),
    finished_at: finished ? isoFrom(finished.finished_at) : null,
    duration_ms: finished ? Number(finished.duration_ms) : null,
    input: row.input,
    output: finished?.output ?? '',
    loop_detected: Boolean(row.loop_detected),
    loop_step_index: row.loop_step_index,
    termination_reason: finished?.termination_reason ?? null,
    termination_detail: finished ? finished.termination_detail || null : null,
    total_steps: Number(row.total_steps),
    total_tokens: Number(row.total_tokens),
    total_cost_usd: Number(row.total_cost_usd),
    metadata: row.metadata,
  };
}

const nullableNumber = (value: number | null | undefined) =>
  value === null || value === undefined ? null : Number(value);

export function toStep(row: StepRow): Step {
  return {
    index: row.index,
    type: row.type,
    name: row.name,
    tool_name: row.tool_name,
    model: row.model,
    input: row.input,
    output: row.output,
    tokens: nullableNumber(row.tokens),
    input_tokens: nullableNumber(row.input_tokens),
    output_tokens: nullableNumber(row.output_tokens),
    cost_usd: row.cost_usd,
    started_at: row.started_at === null ? null : isoFrom(row.started_at),
    duration_ms: nullableNumber(row.duration_ms),
    error: row.error,
  };
}
