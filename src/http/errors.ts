// Typed application errors and their mapping to the contract's error body, in one place.
import type { ErrorRequestHandler, RequestHandler } from 'express';
import { z } from 'zod';

export const ERROR_CODES = [
  'validation_failed',
  'malformed_json',
  'invalid_id',
  'invalid_window',
  'unsupported_signal',
  'unauthenticated',
  'forbidden',
  'not_found',
  'conflict',
  'payload_too_large',
  'unsupported_media_type',
  'rate_limited',
  'unavailable',
  'internal',
  // Requests node's HTTP parser refuses before any route sees them (lean-server.ts, answerClientError).
  'malformed_request',
  'request_timeout',
  'request_header_too_large',
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

export interface ErrorDetail {
  path: string;
  message: string;
}

export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    readonly details: ErrorDetail[] = [],
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

/** A store (Postgres, ClickHouse or the ingest log) could not answer; the request may be retried. */
export class StoreUnavailableError extends AppError {
  constructor(store: 'postgres' | 'clickhouse' | 'ingest log', reason: string, retryAfterSeconds = 5) {
    super(503, 'unavailable', `${store} is unavailable: ${reason}`, [], { 'Retry-After': String(retryAfterSeconds) });
  }
}

export const notFound = (what = 'resource') => new AppError(404, 'not_found', `${what} not found`);
export const forbidden = (message = 'not allowed') => new AppError(403, 'forbidden', message);
export const conflict = (message: string) => new AppError(409, 'conflict', message);
export const unauthenticated = (message = 'authentication required') => new AppError(401, 'unauthenticated', message);
export const tooManyRequests = (retryAfterSeconds: number) =>
  new AppError(429, 'rate_limited', 'too many requests', [], {
    'Retry-After': String(Math.max(1, Math.ceil(retryAfterSeconds))),
  });

/** A 400 about fields: every detail listed, the first one in the message. */
export function invalidFields(
  details: ErrorDetail[],
  code: 'validation_failed' | 'invalid_id' = 'validation_failed',
): AppError {
  const first = details[0];
  const message = first ? (first.path ? `${first.path}: ${first.message}` : first.message) : 'invalid request';
  return new AppError(400, code, message, details);
}

export function validationError(
  code: 'validation_failed' | 'invalid_id',
  issues: z.core.$ZodIssue[],
  prefix: string[] = [],
): AppError {
  const pathOf = (path: PropertyKey[]) => [...prefix, ...path.map(String)].join('.');
  // An unknown field is reported at its own path (zod reports it at its parent's), one detail per field.
  const details = issues.flatMap((issue) =>
    issue.code === 'unrecognized_keys'
      ? issue.keys.map((key) => ({ path: pathOf([...issue.path, key]), message: 'unknown field' }))
      : [{ path: pathOf(issue.path), message: issue.message }],
  );
  return invalidFields(details, code);
}

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

export const payloadTooLarge = () => new AppError(413, 'payload_too_large', 'request body is too large');
export const malformedJson = () => new AppError(400, 'malformed_json', 'request body is not valid JSON');

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
