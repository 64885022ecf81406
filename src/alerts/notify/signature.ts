// Standard Webhooks signatures (https://www.standardwebhooks.com): signing what we send, verifying it on the
// receiving side.
import { createHmac, timingSafeEqual } from 'node:crypto';

const SECRET_PREFIX = 'whsec_';
const VERSION_PREFIX = 'v1,';
/** Receivers refuse a timestamp further than this from their clock, so that a captured request cannot be replayed. */
export const DEFAULT_TOLERANCE_SECONDS = 5 * 60;

/** The HMAC key: per the specification, the base64 after `whsec_`; a secret without the prefix is used as its bytes. */
export function signingKey(secret: string): Buffer {
  if (!secret.startsWith(SECRET_PREFIX)) return Buffer.from(secret, 'utf8');
  return Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64');
}

/** `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`, the value of the `webhook-signature` header. */
export function signWebhook(secret: string, id: string, timestamp: number, body: string): string {
  const digest = createHmac('sha256', signingKey(secret)).update(`${id}.${timestamp}.${body}`).digest('base64');
  return `${VERSION_PREFIX}${digest}`;
}

export interface SignedRequest {
  /** The `webhook-id` header. */
  id: string;
  /** The `webhook-timestamp` header (unix seconds, as text or number). */
  timestamp: string | number;
  /** The `webhook-signature` header: one or more space-separated `v1,<base64>`. */
  signature: string;
  /** The raw body, exactly as received (before any JSON parsing). */
  body: string;
}

/**
 * True when one of the signatures matches and the timestamp is within `toleranceSeconds` of `now`.
 * Comparison is constant-time; anything malformed is simply false.
 */
export function verifyWebhook(
  secret: string,
  request: SignedRequest,
  options: { now?: Date; toleranceSeconds?: number } = {},
): boolean {
  const timestamp = Number(request.timestamp);
  if (!Number.isInteger(timestamp)) return false;
  const nowSeconds = Math.floor((options.now ?? new Date()).getTime() / 1000);
  if (Math.abs(nowSeconds - timestamp) > (options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS)) return false;
  const expected = Buffer.from(signWebhook(secret, request.id, timestamp, request.body));
  return request.signature
    .split(' ')
    .filter((candidate) => candidate.startsWith(VERSION_PREFIX))
    .some((candidate) => {
      const given = Buffer.from(candidate);
      return given.length === expected.length && timingSafeEqual(given, expected);
    });
}
