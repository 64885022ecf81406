// Request and response schemas of the ingest endpoints (contract section 4).
import { z } from 'zod';
import { count, storableTimestamp as timestamp, text as wellFormedText, timestampOut, uuid } from '../http/schemas';
import { FINISHED_STATUSES, STEP_TYPES, TERMINATION_REASONS } from '../runs/model';
import { scoreList } from '../scores/model';

const MiB = 1024 * 1024;
const text = wellFormedText().max(MiB, 'must be at most 1 MiB');
const nonNegativeInteger = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
// Bounds under which a run's sums stay exact (tokens: thousands of steps at the bound still sum under 2^53) and
// finite (dollars): a trillion tokens or dollars is beyond any real step or run.
const tokens = z.number().int().min(0).max(1e12);
const money = z.number().min(0).max(1e12);
const optionalText = text.nullish();

export const stepSchema = z
  .strictObject({
    index: z
      .number()
      .int()
      .min(0)
      .max(2 ** 32 - 1),
    type: z.enum(STEP_TYPES),
    name: optionalText,
    tool_name: optionalText,
    model: optionalText,
    input: optionalText,
    output: optionalText,
    tokens: tokens.nullish(),
    input_tokens: tokens.nullish(),
    output_tokens: tokens.nullish(),
    cost_usd: money.nullish(),
    started_at: timestamp.nullish(),
    duration_ms: nonNegativeInteger.nullish(),
    error: optionalText,
  })
  .refine((step) => step.type !== 'tool' || (step.tool_name ?? '') !== '', {
    message: 'is required when type is tool',
    path: ['tool_name'],
  })
  .meta({ id: 'StepInput' });
export type StepInput = z.infer<typeof stepSchema>;

const steps = z.array(stepSchema).max(1000, 'at most 1000 steps per call');

// A run's session, user and tags (contract §10): sent on start, in batch items and on finish (which sets an id the
// start left null and adds tags).
const clientId = wellFormedText().min(1).max(200);
export const MAX_RUN_TAGS = 50;
const labelFields = {
  session_id: clientId.optional(),
  user_id: clientId.optional(),
  tags: z
    .array(wellFormedText().min(1).max(100))
    .max(1000)
    .refine((tags) => new Set(tags).size <= MAX_RUN_TAGS, `at most ${MAX_RUN_TAGS} distinct tags`)
    .optional(),
};

const startFields = {
  agent_name: wellFormedText().min(1).max(200),
  input: text.optional(),
  metadata: z.array(z.number()).max(1024).optional(),
  id: uuid.optional(),
  timestamp: timestamp.optional(),
  ...labelFields,
};

const finishFields = {
  status: z.enum(FINISHED_STATUSES),
  termination_detail: wellFormedText().max(2000).optional(),
  output: text.optional(),
  termination_reason: z.enum(TERMINATION_REASONS).exclude(['abandoned']).optional(),
  finished_at: timestamp.optional(),
  steps: steps.optional(),
  total_tokens: tokens.optional(),
  total_cost_usd: money.optional(),
  metadata: z.array(z.number()).max(1024).optional(),
  ...labelFields,
};

export const startBody = z.strictObject(startFields).meta({ id: 'RunStart' });
export type StartInput = z.infer<typeof startBody>;

// An empty `steps: []` is allowed wherever steps are; on the steps call it just reads the run's totals.
export const stepsBody = z.strictObject({ timestamp, steps }).meta({ id: 'RunSteps' });

export const finishBody = z.strictObject({ timestamp, ...finishFields }).meta({ id: 'RunFinish' });
export type FinishInput = z.infer<typeof finishBody>;

/** A batch item is a start that may carry the finish fields, to record a whole run at once, and its scores. */
export const batchItem = z
  .strictObject({
    ...startFields,
    ...finishFields,
    status: finishFields.status.optional(),
    scores: scoreList.optional().describe("the run's scores (contract §10), recorded with it"),
  })
  .refine(
    (item) =>
      item.status !== undefined ||
      Object.keys(finishFields).every((field) => Object.hasOwn(startFields, field) || !(field in item)),
    {
      message: 'is required when finish fields are sent',
      path: ['status'],
    },
  )
  .meta({ id: 'RunBatchItem' });
export type BatchItem = z.infer<typeof batchItem>;

const batchOf = (item: z.ZodType) => z.strictObject({ runs: z.array(item).min(1).max(1000) });
// The route takes the items as they come and checks each one on its own (ingest/service.ts), so that a bad item
// never fails its neighbours; the OpenAPI document shows them whole.
export const batchBody = batchOf(z.unknown());
export const documentedBatchBody = batchOf(batchItem).meta({ id: 'RunBatch' });

export const startResult = z.object({ id: uuid, timestamp: timestampOut }).meta({ id: 'RunStartResult' });
export const stepsResult = startResult
  .extend({
    total_steps: count,
    loop_detected: z.boolean(),
    loop_step_index: count.nullable(),
  })
  .meta({ id: 'RunStepsResult' });
export const batchResult = z
  .object({
    results: z.array(z.union([startResult, z.object({ error: z.object({ code: z.string(), message: z.string() }) })])),
  })
  .meta({ id: 'RunBatchResult' });
