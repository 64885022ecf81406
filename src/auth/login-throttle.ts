// Login throttling (OWASP's authentication guidance): failed logins are counted per client address and per client
// address + e-mail, and past an allowance each further attempt waits a delay that doubles with every failure. Nothing
// is ever counted per e-mail alone, so guesses from elsewhere never keep an account's owner out.
import type { Sql } from '../db/postgres';
import * as q from './queries';

export interface LoginThrottleSettings {
  /** Failed logins of one e-mail from one address before the delays begin. */
  failuresPerEmail: number;
  /** Failed logins from one address, whatever the e-mails, before the delays begin. */
  failuresPerAddress: number;
  /** The longest delay between two attempts, in seconds. */
  maxDelaySeconds: number;
}

/** A counter is forgotten this long after its last failure. */
const FAILURE_MEMORY_MS = 24 * 3600 * 1000;

interface FailureRow {
  key: string;
  failures: number;
  last_failure_at: Date;
}

const keysOf = (address: string, email: string) => ({
  address: `address:${address}`,
  pair: `pair:${address}|${email}`,
});

export function loginThrottle(pg: Sql, settings: LoginThrottleSettings) {
  /** Seconds before the next attempt of a counter may be served: 0 within its allowance, then 1, 2, 4… up to max. */
  function delayOf(row: FailureRow, allowance: number, now: Date): number {
    if (row.failures < allowance) return 0;
    const delayMs = Math.min(2 ** (row.failures - allowance), settings.maxDelaySeconds) * 1000;
    return Math.max(0, row.last_failure_at.getTime() + delayMs - now.getTime()) / 1000;
  }

  return {
    /** Seconds the caller must wait before this attempt is served; 0 when it may go on. */
    async waitFor(address: string, email: string, now: Date): Promise<number> {
      const keys = keysOf(address, email);
      const since = new Date(now.getTime() - FAILURE_MEMORY_MS);
      const rows = await pg.query<FailureRow>(q.SELECT_LOGIN_FAILURES, [[keys.address, keys.pair], since]);
      const waits = rows.map((row) =>
        delayOf(row, row.key === keys.pair ? settings.failuresPerEmail : settings.failuresPerAddress, now),
      );
      return Math.max(0, ...waits);
    },

    /** Counts a failure for the address and for the address + e-mail (a counter older than a day starts again). */
    async recordFailure(address: string, email: string, now: Date): Promise<void> {
      const keys = keysOf(address, email);
      const since = new Date(now.getTime() - FAILURE_MEMORY_MS);
      await pg.query(q.COUNT_LOGIN_FAILURE, [[keys.address, keys.pair], now, since]);
    },

    /** The owner got in from this address: their e-mail's counter there starts again (the address's does not). */
    async recordSuccess(address: string, email: string): Promise<void> {
      await pg.query(q.DELETE_LOGIN_FAILURES, [keysOf(address, email).pair]);
    },
  };
}

export type LoginThrottle = ReturnType<typeof loginThrottle>;
