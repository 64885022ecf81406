// Request and response schemas of the ingest endpoints (contract section 4).
import { z } from 'zod';
import { text as wellFormedText, timestamp, timestampOut, uuid } from '../http/schemas';
import { FINISHED_STATUSES, STEP_TYPES, TERMINATION_REASONS } from '../runs/model';

const MiB = 1024 * 1024;
const text = wellFormedText().max(MiB, 'must be at most 1 MiB');
const nonNegativeInteger = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
const money = z.number().min(0);
const optionalText = text.nullish();

export const stepSchema = z
  .strictObject({
    index: z.number().int().min(0).max(2 ** 32 - 1),
    type: z.enum(STEP_TYPES),
    name: optionalText,
    tool_name: optionalText,
    model: optionalText,
    input: optionalText,
    output: optionalText,
    tokens: nonNegativeInteger.nullish(),
    cost_usd: money.nullish(),
    started_at: timestamp.nullish(),
    duration_ms: nonNegativeInteger.nullish(),
    error: optionalText,
  })
  .refine((step) => step.type !== 'tool' || (step.tool_name ?? '') !== '', {
    message: 'is required when type is tool',
    path: ['tool_name'],
  });
export type StepInput = z.infer<typeof stepSchema>;

const steps = z.array(stepSchema).max(1000, 'at most 1000 steps per call');

const startFields = {
  agent_name: wellFormedText().min(1).max(200),
  input: text.optional(),
  metadata: z.array(z.number()).max(1024).optional(),
  id: uuid.optional(),
  timestamp: timestamp.optional(),
};

const finishFields = {
  status: z.enum(FINISHED_STATUSES),
  termination_detail: wellFormedText().max(2000).optional(),
  output: text.optional(),
  termination_reason: z.enum(TERMINATION_REASONS).exclude(['abandoned']).optional(),
  finished_at: timestamp.optional(),
  steps: steps.optional(),
  total_tokens: nonNegativeInteger.optional(),
  total_cost_usd: money.optional(),
  metadata: z.array(z.number()).max(1024).optional(),
};

export const startBody = z.strictObject(startFields);
export type StartInput = z.infer<typeof startBody>;

// An empty `steps: []` is allowed wherever steps are; on the steps call it just reads the run's totals.
export const stepsBody = z.strictObject({ timestamp, steps });

export const finishBody = z.strictObject({ timestamp, ...finishFields });
export type FinishInput = z.infer<typeof finishBody>;

/** A batch item is a start that may carry the finish fields, to record a whole run at once. */
export const batchItem = z
  .strictObject({ ...startFields, ...finishFields, status: finishFields.status.optional() })
  .refine((item) => item.status !== undefined || Object.keys(finishFields).every((field) => field === 'metadata' || !(field in item)), {
    message: 'is required when finish fields are sent',
    path: ['status'],
  });
export type BatchItem = z.infer<typeof batchItem>;

export const batchBody = z.strictObject({ runs: z.array(z.unknown()).min(1).max(1000) });

export const startResult = z.object({ id: uuid, timestamp: timestampOut });
export const stepsResult = startResult.extend({
  total_steps: z.number().int(),
  loop_detected: z.boolean(),
  loop_step_index: z.number().int().nullable(),
});
export const batchResult = z.object({
  results: z.array(z.union([startResult, z.object({ error: z.object({ code: z.string(), message: z.string() }) })])),
});
