// One HTTP POST of a notification, and what its answer means for the delivery: sent, retry later, or give up now.
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { RefusedAddressError } from '../url-safety';
import { isRetryableStatus, parseRetryAfter } from './retry';

/** The contract's timeout for one attempt, answer included. */
export const ATTEMPT_TIMEOUT_MS = 10_000;
const ERROR_BODY_CHARS = 200;

export type AttemptOutcome =
  | { kind: 'sent'; statusCode: number }
  | { kind: 'retry'; statusCode: number | null; error: string; retryAfterMs: number | null }
  | { kind: 'failed'; statusCode: number | null; error: string };

function describeNetworkError(error: Error & { code?: string }): string {
  if (error.name === 'TimeoutError' || error.name === 'AbortError')
    return `timed out after ${ATTEMPT_TIMEOUT_MS / 1000} s`;
  if (error.code && !error.message.includes(error.code)) return `${error.code}: ${error.message}`;
  return error.message || error.code || 'network error';
}

/** The start of an answer's body, for `last_error`; the rest is not read. */
function readSnippet(response: http.IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    const finish = (chunk?: Buffer) => {
      response.destroy();
      resolve(chunk ? chunk.toString('utf8').slice(0, ERROR_BODY_CHARS).replace(/\s+/g, ' ').trim() : '');
    };
    response.once('data', finish);
    response.once('end', () => finish());
    response.once('error', () => finish());
  });
}

async function classify(response: http.IncomingMessage, now: Date): Promise<AttemptOutcome> {
  // The timeout may abort the request while the rest of an answer is being discarded; that is no longer news.
  response.on('error', () => undefined);
  const statusCode = response.statusCode ?? 0;
  if (statusCode >= 200 && statusCode < 300) {
    response.resume();
    return { kind: 'sent', statusCode };
  }
  if (statusCode >= 300 && statusCode < 400) {
    response.destroy();
    // A redirect could lead anywhere, private addresses included; receivers must answer at the URL configured.
    return {
      kind: 'failed',
      statusCode,
      error: `HTTP ${statusCode}: redirects are not followed (to ${response.headers.location ?? '?'})`,
    };
  }
  const retryAfter = response.headers['retry-after'];
  const snippet = await readSnippet(response);
  const error = `HTTP ${statusCode}${snippet ? `: ${snippet}` : ''}`;
  if (isRetryableStatus(statusCode))
    return { kind: 'retry', statusCode, error, retryAfterMs: parseRetryAfter(retryAfter, now) };
  return { kind: 'failed', statusCode, error };
}

/**
 * POSTs `body` as JSON to `url` with a 10 s timeout. Network errors and timeouts, 408, 429 and 5xx are retryable;
 * 3xx and other 4xx are final. `lookup` resolves the host for the connection (url-safety.ts's checkedLookup, which
 * refuses addresses the deployment does not send to).
 */
export function postJson(
  url: string,
  body: string,
  headers: Record<string, string>,
  options: { now: Date; lookup?: LookupFunction },
): Promise<AttemptOutcome> {
  return new Promise((resolve) => {
    const target = new URL(url);
    const client = target.protocol === 'https:' ? https : http;
    const request = client.request(target, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(body)),
        'user-agent': 'runwatch-notifier/1',
        ...headers,
      },
      signal: AbortSignal.timeout(ATTEMPT_TIMEOUT_MS),
      ...(options.lookup ? { lookup: options.lookup } : {}),
    });
    request.once('response', (response) => {
      classify(response, options.now).then(resolve, (error: Error) =>
        resolve({ kind: 'retry', statusCode: null, error: describeNetworkError(error), retryAfterMs: null }),
      );
    });
    // `on`, not `once`: a late second error (the timeout firing while an answer is discarded) must not go unhandled.
    request.on('error', (error: Error & { code?: string }) => {
      if (error instanceof RefusedAddressError)
        return resolve({ kind: 'failed', statusCode: null, error: `refused: ${error.message}` });
      resolve({ kind: 'retry', statusCode: null, error: describeNetworkError(error), retryAfterMs: null });
    });
    request.end(body);
  });
}
