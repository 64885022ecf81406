// The service's errors: what went wrong, as the contract names it (code, status, details). Every layer throws
// these; http/errors.ts turns them into the contract's error body.
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
  // Requests node's HTTP parser refuses before any route sees them (http/server.ts, answerClientError).
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

/**
 * A refusal of load past a limit (a full lane, the byte budget, a read out of its time: docs/limits.md): 503 with
 * Retry-After, which clients retry. The service is working as meant: it is logged as a refusal, not as a failure.
 */
export class OverloadError extends AppError {
  constructor(message: string, retryAfterSeconds = 1) {
    super(503, 'unavailable', message, [], { 'Retry-After': String(retryAfterSeconds) });
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

export const payloadTooLarge = () => new AppError(413, 'payload_too_large', 'request body is too large');
export const malformedJson = (message = 'request body is not valid JSON') =>
  new AppError(400, 'malformed_json', message);
