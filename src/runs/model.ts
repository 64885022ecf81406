// The run and step as the API shows them (zod), and the values their fields take. Their rows as stored, and the
// mapping from rows to these, are in tables.ts.
import { z } from 'zod';
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
    session_id: z.string().nullable(),
    user_id: z.string().nullable(),
    tags: z.array(z.string()),
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
