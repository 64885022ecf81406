// The contract's error body, and the mapping of anything thrown (an AppError, a body parser's error) to it.
import type { ErrorRequestHandler, RequestHandler } from 'express';
import { z } from 'zod';
import { AppError, ERROR_CODES, malformedJson, payloadTooLarge } from '../errors';

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

/** Body-parser failures carry a `type`; they become the contract's 400/413/415. So does an undecodable path. */
function fromBodyParserError(error: { type?: string; message?: string }): AppError | undefined {
  // The router could not percent-decode a path parameter.
  if (error instanceof URIError)
    return new AppError(400, 'invalid_id', 'a path parameter is not valid percent-encoding');
  switch (error.type) {
    case 'entity.parse.failed':
      return malformedJson();
    case 'entity.too.large':
      return payloadTooLarge();
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return new AppError(415, 'unsupported_media_type', 'unsupported body encoding');
    default:
      // Any other 400 of the body parser, untyped: a body it could not read, such as a gzip stream that does
      // not decompress.
      return (error as { status?: unknown }).status === 400
        ? new AppError(400, 'malformed_json', 'request body could not be decoded')
        : undefined;
  }
}

export const handleNotFound: RequestHandler = (_req, _res, next) =>
  next(new AppError(404, 'not_found', 'no such route'));

/** Any thrown value as the AppError it is answered with: a 500 when it is none of ours. */
export function toAppError(error: unknown): AppError {
  if (error instanceof AppError) return error;
  return fromBodyParserError((error ?? {}) as { type?: string }) ?? new AppError(500, 'internal', 'internal error');
}

/** The contract's error body. */
export const errorBody = (error: AppError, requestId: string) => ({
  error: { code: error.code, message: error.message, details: error.details, request_id: requestId },
});

export const handleErrors: ErrorRequestHandler = (error, req, res, _next) => {
  const mapped = toAppError(error);
  // The request log line carries the status at warn/error level; the cause of a 5xx is logged here, once.
  if (mapped.status >= 500) req.log.error({ err: error, code: mapped.code }, mapped.message);
  if (res.headersSent) return;
  res.set(mapped.headers);
  res.status(mapped.status).json(errorBody(mapped, String(req.id)));
};
