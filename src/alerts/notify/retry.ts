// When a failed delivery is tried again: which failures are retryable, exponential backoff with jitter,
// Retry-After, giving up.

/** A delivery still failing this long after it was queued is given up (`failed`). */
export const GIVE_UP_AFTER_MS = 24 * 3600 * 1000;
const BASE_DELAY_MS = 5_000;
const MAX_DELAY_MS = 3600 * 1000;
/** Each delay is moved by up to ±20 %, so that receivers that fail together are not retried in lock-step. */
const JITTER = 0.2;

/** 408, 429 and 5xx are worth retrying; every other non-2xx answer will not change by itself. */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}

/**
 * The delay before attempt `attempts + 1`, after `attempts` failed ones: 5 s, 10 s, 20 s, … capped at 1 h, ± jitter.
 * `random` is in [0, 1); injectable for tests.
 */
export function backoffDelayMs(attempts: number, random: () => number = Math.random): number {
  const exponent = Math.max(0, attempts - 1);
  const delay = Math.min(MAX_DELAY_MS, BASE_DELAY_MS * 2 ** Math.min(exponent, 30));
  return Math.round(delay * (1 + JITTER * (2 * random() - 1)));
}

/** `Retry-After` as milliseconds from `now`: delta-seconds or an HTTP date; null when absent or unreadable. */
export function parseRetryAfter(header: string | null | undefined, now: Date): number | null {
  if (!header) return null;
  const text = header.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return null;
  return Math.max(0, at - now.getTime());
}

export type RetryDecision = { retry: true; nextAttemptAt: Date } | { retry: false };

/**
 * After a retryable failure: the next attempt is after the larger of the backoff and `Retry-After`, but not later
 * than the give-up deadline (one last try then); at or past the deadline, give up.
 */
export function decideRetry(options: {
  now: Date;
  queuedAt: Date;
  attempts: number;
  retryAfterMs: number | null;
  random?: () => number;
}): RetryDecision {
  const deadline = options.queuedAt.getTime() + GIVE_UP_AFTER_MS;
  if (options.now.getTime() >= deadline) return { retry: false };
  const delay = Math.max(backoffDelayMs(options.attempts, options.random), options.retryAfterMs ?? 0);
  return { retry: true, nextAttemptAt: new Date(Math.min(options.now.getTime() + delay, deadline)) };
}
