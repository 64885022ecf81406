// One HTTP POST of a notification, and what its answer means for the delivery: sent, retry later, or give up now.
import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { isInternalAddress } from '../url-safety';
import { isRetryableStatus, parseRetryAfter } from './retry';

/** The contract's timeout for one attempt, answer included. */
export const ATTEMPT_TIMEOUT_MS = 10_000;
const ERROR_BODY_CHARS = 200;

export type AttemptOutcome =
  | { kind: 'sent'; statusCode: number }
  | { kind: 'retry'; statusCode: number | null; error: string; retryAfterMs: number | null }
  | { kind: 'failed'; statusCode: number | null; error: string };

class PrivateAddressError extends Error {
  readonly code = 'EPRIVATEADDRESS';
}

/**
 * DNS resolution that refuses internal addresses, used for the connection itself when private addresses are denied:
 * the address connected to is the one checked, so a name cannot resolve to a public address for the check and to a
 * private one for the connection (DNS rebinding).
 */
const publicOnlyLookup: LookupFunction = (hostname, options, callback) => {
  dns.lookup(hostname, { ...options, all: true }, (error, addresses) => {
    if (error) return callback(error, '', 0);
    const blocked = addresses.find((entry) => isInternalAddress(entry.address));
    if (blocked)
      return callback(
        new PrivateAddressError(`host ${hostname} resolves to a private or loopback address (${blocked.address})`),
        '',
        0,
      );
    if (addresses.length === 0)
      return callback(Object.assign(new Error(`host ${hostname} has no address`), { code: 'ENOTFOUND' }), '', 0);
    if (options.all)
      return (callback as unknown as (error: null, addresses: dns.LookupAddress[]) => void)(null, addresses);
    return callback(null, addresses[0].address, addresses[0].family);
  });
};

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
 * 3xx and other 4xx are final. With `denyPrivate`, the connection refuses hosts that resolve to internal addresses.
 */
export function postJson(
  url: string,
  body: string,
  headers: Record<string, string>,
  options: { now: Date; denyPrivate: boolean },
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
      ...(options.denyPrivate ? { lookup: publicOnlyLookup } : {}),
    });
    request.once('response', (response) => {
      classify(response, options.now).then(resolve, (error: Error) =>
        resolve({ kind: 'retry', statusCode: null, error: describeNetworkError(error), retryAfterMs: null }),
      );
    });
    // `on`, not `once`: a late second error (the timeout firing while an answer is discarded) must not go unhandled.
    request.on('error', (error: Error & { code?: string }) => {
      if (error instanceof PrivateAddressError)
        return resolve({ kind: 'failed', statusCode: null, error: `refused: ${error.message}` });
      resolve({ kind: 'retry', statusCode: null, error: describeNetworkError(error), retryAfterMs: null });
    });
    request.end(body);
  });
}
