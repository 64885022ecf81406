// The score as the API takes and shows it (contract §10), and the values its fields take.
import { z } from 'zod';
import { text, timestampOut, uuid } from '../http/schemas';

export const SCORE_SOURCES = ['api', 'user', 'eval', 'human'] as const;
export const SCORE_DATA_TYPES = ['numeric', 'boolean', 'categorical'] as const;
export type ScoreSource = (typeof SCORE_SOURCES)[number];
export type ScoreDataType = (typeof SCORE_DATA_TYPES)[number];

/** A score's name: 1–100 characters of [a-z0-9_.:-]. */
export const scoreName = z
  .string()
  .regex(/^[a-z0-9_.:-]{1,100}$/, 'must be 1–100 characters of a-z, 0-9, _ . : -')
  .describe('1–100 characters of [a-z0-9_.:-]');

const scoreValue = z.union([
  z.number().refine(Number.isFinite, 'must be a finite number'),
  z.boolean(),
  text().min(1).max(100),
]);

/** A score as sent: in a scores call, and in a batch item's `scores`. */
export const scoreInput = z
  .strictObject({
    name: scoreName,
    value: scoreValue.describe('a finite number (numeric), true/false (boolean), or a string of 1–100 (categorical)'),
    source: z.enum(SCORE_SOURCES).optional(),
    comment: text().max(2000).nullish(),
    id: uuid.optional().describe('re-sending a score with the same id replaces it; without one every call adds'),
  })
  .meta({ id: 'ScoreInput' });
export type ScoreInput = z.infer<typeof scoreInput>;

export const scoreList = z.array(scoreInput).min(1).max(100);

/** The data type a value is of: a name keeps one per project. */
export const dataTypeOf = (value: ScoreInput['value']): ScoreDataType =>
  typeof value === 'number' ? 'numeric' : typeof value === 'boolean' ? 'boolean' : 'categorical';

export const scoreSchema = z
  .object({
    id: uuid,
    run_id: uuid,
    name: z.string(),
    data_type: z.enum(SCORE_DATA_TYPES),
    value: z.union([z.number(), z.boolean(), z.string()]),
    source: z.enum(SCORE_SOURCES),
    comment: z.string().nullable(),
    created_at: timestampOut,
  })
  .meta({ id: 'Score' });
export type Score = z.infer<typeof scoreSchema>;
