// Calls to the API of this origin, signed in by the session cookie (HttpOnly: the page never holds the token).
import type { ErrorBody } from './types';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: ErrorBody['error']['details'] = [],
    /** How long the service asked to wait before a retry (Retry-After), 1 s when it did not say. */
    readonly retryAfterMs = 1000,
  ) {
    super(message);
  }
}

/** A failure as a form shows it: a rejected body lists what is wrong with each field. */
export function describeFailure(failure: unknown): Error {
  return failure instanceof ApiError && failure.details.length > 0
    ? new Error(failure.details.map((detail) => `${detail.path}: ${detail.message}`).join('; '))
    : (failure as Error);
}

/** Told of every 401, so that the app can send the user to sign in. */
let onUnauthorized: () => void = () => undefined;
export const whenUnauthorized = (handler: () => void) => {
  onUnauthorized = handler;
};

export interface Answer<T> {
  data: T;
  headers: Headers;
}

export async function request<T>(method: string, path: string, body?: unknown): Promise<Answer<T>> {
  let res: Response;
  try {
    res = await fetch(path, {
      method,
      credentials: 'same-origin',
      headers: body === undefined ? {} : { 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch {
    throw new ApiError(0, 'network', 'the service cannot be reached');
  }
  const text = await res.text();
  let data: unknown;
  try {
    data = text ? JSON.parse(text) : undefined;
  } catch {
    // Not the service's JSON: a proxy's error page, say.
    throw new ApiError(res.status, 'http_error', `${res.status} ${res.statusText}: the answer was not JSON`);
  }
  if (!res.ok) {
    const error = (data as ErrorBody | undefined)?.error;
    if (res.status === 401 && !path.startsWith('/auth/')) onUnauthorized();
    throw new ApiError(
      res.status,
      error?.code ?? 'http_error',
      error?.message ?? `${res.status} ${res.statusText}`,
      error?.details,
      1000 * (Number(res.headers.get('retry-after')) || 1),
    );
  }
  return { data: data as T, headers: res.headers };
}

// A busy service answers a read 503 with Retry-After (its read lane is full, docs/limits.md): a page's reads wait that
// long and ask again, a few times, before the page shows the failure. Writes are not retried here.
const READ_RETRIES = 3;
const MAX_RETRY_WAIT_MS = 5_000;

export async function get<T>(path: string): Promise<T> {
  for (let attempt = 0; ; attempt += 1) {
    try {
      return (await request<T>('GET', path)).data;
    } catch (failure) {
      if (!(failure instanceof ApiError && failure.status === 503 && attempt < READ_RETRIES)) throw failure;
      await new Promise((resume) => setTimeout(resume, Math.min(failure.retryAfterMs, MAX_RETRY_WAIT_MS)));
    }
  }
}
export const post = async <T>(path: string, body?: unknown) => (await request<T>('POST', path, body ?? {})).data;
export const patch = async <T>(path: string, body: unknown) => (await request<T>('PATCH', path, body)).data;
export const del = async (path: string) => void (await request('DELETE', path));

export type Query = Record<string, string | number | boolean | undefined | null>;

/** `?name=value&…` of the query's values that are set, or '' when none is. */
export function searchOf(query: Query): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(query))
    if (value !== undefined && value !== null && value !== '') search.set(name, String(value));
  const text = search.toString();
  return text ? `?${text}` : '';
}
