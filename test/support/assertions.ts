// Assertions shared by the API tests: the contract's error body and its details, and the formats of ids, keys and
// timestamps.
import type { Response } from 'supertest';

/** An RFC 3339 UTC timestamp with milliseconds, as the service writes them: `2026-01-02T03:04:05.678Z`. */
export const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
/** A lower-case UUID of any version. */
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** A lower-case UUID of version 7 with the RFC 9562 variant, as the service generates run ids. */
export const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
/** A project API key: `rw_` and 40 base62 characters. */
export const KEY = /^rw_[0-9A-Za-z]{40}$/;
/** A webhook signing secret as the service generates it: `whsec_` and 32 random bytes in base64. */
export const WEBHOOK_SECRET = /^whsec_[A-Za-z0-9+/]{43}=$/;
/** A webhook secret as the API shows it after creation: its prefix and last 4 characters. */
export const MASKED_WEBHOOK_SECRET = /^whsec_…[A-Za-z0-9+/=]{4}$/;
/** A well-formed UUID that names nothing: an organization, project, user or key that does not exist. */
export const UNKNOWN = '0190b3a5-6c4e-7d3f-8a1b-2c3d4e5f6a7b';

/** The contract's error body (the `error` member of the response body). */
export interface ErrorBody {
  code: string;
  message: string;
  details: { path: string; message: string }[];
  request_id: string;
}

/**
 * Checks the contract's error body: the status and code, a JSON body of `error` alone with exactly code, message,
 * details and request_id, a string message, an array of details, and request_id equal to the X-Request-Id header.
 * Returns the error body.
 */
export function expectError(res: Response, status: number, code: string): ErrorBody {
  expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status, code });
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(Object.keys(res.body)).toEqual(['error']);
  expect(Object.keys(res.body.error).sort()).toEqual(['code', 'details', 'message', 'request_id']);
  expect(typeof res.body.error.message).toBe('string');
  expect(Array.isArray(res.body.error.details)).toBe(true);
  expect(res.body.error.request_id).toBe(res.headers['x-request-id']);
  return res.body.error as ErrorBody;
}

/** A 400 validation_failed that names `path` among its details. Returns the error body. */
export function expectFieldError(res: Response, path: string): ErrorBody {
  const error = expectError(res, 400, 'validation_failed');
  expect(error.details.map((detail) => detail.path)).toContain(path);
  return error;
}

/** The paths named by an error body's details, sorted. */
export const detailPaths = (res: Response) =>
  (res.body.error.details as { path: string }[]).map((detail) => detail.path).sort();

/** The status and error body without its request id, to compare two refusals. */
export const refusal = (res: Response) => ({ status: res.status, ...res.body.error, request_id: undefined });
