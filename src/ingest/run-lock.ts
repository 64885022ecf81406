// Serialises the read-modify-write of one run (steps, finish), or of several traces at once, inside this process.
export class KeyedLock {
  /** Per key, the work that holds it last: whoever takes the key next waits for it. */
  private readonly tails = new Map<string, Promise<unknown>>();

  run<T>(key: string, work: () => Promise<T>): Promise<T> {
    return this.runAll([key], work);
  }

  /**
   * Holds every key at once: the work waits for the holders of any of them before it (failed or not), and later
   * holders wait for it. The keys are taken in one synchronous step, so holders of overlapping sets cannot deadlock
   * (each waits only for holders that came before it), and taking thousands of keys (an export's traces) costs a
   * map entry each, not a chain of promises one key after the other.
   */
  async runAll<T>(keys: readonly string[], work: () => Promise<T>): Promise<T> {
    const unique = [...new Set(keys)];
    const before = new Set(unique.map((key) => this.tails.get(key)).filter((tail) => tail !== undefined));
    const current = Promise.allSettled(before).then(work);
    for (const key of unique) this.tails.set(key, current);
    try {
      return await current;
    } finally {
      for (const key of unique) if (this.tails.get(key) === current) this.tails.delete(key);
    }
  }
}
