// Fixed-window counters kept in process memory: enough for one instance; each instance limits on its own.
export class RateLimiter {
  private readonly windows = new Map<string, { startedAt: number; count: number }>();

  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Counts one hit; returns the seconds to wait when the key is over its limit, else 0. */
  hit(key: string): number {
    const window = this.current(key);
    window.count += 1;
    return window.count > this.limit ? this.secondsLeft(window) : 0;
  }

  /** Seconds to wait when the key is already at its limit, without counting a hit. */
  blockedFor(key: string): number {
    const window = this.current(key);
    return window.count >= this.limit ? this.secondsLeft(window) : 0;
  }

  reset(key: string): void {
    this.windows.delete(key);
  }

  private current(key: string) {
    const now = this.now();
    let window = this.windows.get(key);
    if (!window || now - window.startedAt >= this.windowMs) {
      window = { startedAt: now, count: 0 };
      this.windows.set(key, window);
      this.forgetExpired(now);
    }
    return window;
  }

  private secondsLeft(window: { startedAt: number }): number {
    return Math.max(1, Math.ceil((window.startedAt + this.windowMs - this.now()) / 1000));
  }

  // Old windows are dropped now and then, so the map stays as small as the set of active clients.
  private forgetExpired(now: number): void {
    if (this.windows.size < 10_000) return;
    for (const [key, window] of this.windows) if (now - window.startedAt >= this.windowMs) this.windows.delete(key);
  }
}
