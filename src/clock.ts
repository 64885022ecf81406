// The service's notion of "now": real time in production, a clock the tests can move; and waits with a deadline.
export interface Clock {
  now(): Date;
}

/** Lengths of time in milliseconds (UTC: no day is longer than another). */
export const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;

export const systemClock: Clock = { now: () => new Date() };

/** A clock that stands still until told to move; for tests of time-based behaviour. */
export class ManualClock implements Clock {
  constructor(private current: Date = new Date()) {}
  now(): Date {
    return new Date(this.current.getTime());
  }
  set(instant: Date): void {
    this.current = new Date(instant.getTime());
  }
  advance(seconds: number): void {
    this.current = new Date(this.current.getTime() + seconds * 1000);
  }
}

/** What `work` resolves to, or `late` once `ms` have passed without it (no longer waited for then). */
export async function within<T>(ms: number, work: Promise<T>, late: T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<T>((resolve) => (timer = setTimeout(() => resolve(late), ms)));
  try {
    return await Promise.race([work, deadline]);
  } finally {
    clearTimeout(timer);
  }
}
