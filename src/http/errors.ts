// The contract's error body, and anything thrown as the AppError it is answered with.
import { z } from 'zod';
import { AppError, ERROR_CODES } from '../errors';

export const errorSchema = z
  .object({
    error: z.object({
      code: z.enum(ERROR_CODES),
      message: z.string(),
      details: z.array(z.object({ path: z.string(), message: z.string() })),
      request_id: z.string(),
    }),
  })
  .meta({ id: 'Error' });

/** Any thrown value as the AppError it is answered with: a 500 when it is none of ours. */
export function toAppError(error: unknown): AppError {
  return error instanceof AppError ? error : new AppError(500, 'internal', 'internal error');
}

/** The contract's error body. */
export const errorBody = (error: AppError, requestId: string) => ({
  error: { code: error.code, message: error.message, details: error.details, request_id: requestId },
});
