// Serialises the read-modify-write of one run (steps, finish) inside this process.
export class KeyedLock {
  private readonly tails = new Map<string, Promise<unknown>>();

  async run<T>(key: string, work: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    const current = previous.catch(() => undefined).then(work);
    this.tails.set(key, current);
    try {
      return await current;
    } finally {
      if (this.tails.get(key) === current) this.tails.delete(key);
    }
  }

  /** Holds every key at once; taken in sorted order, so two holders of overlapping sets cannot deadlock. */
  runAll<T>(keys: readonly string[], work: () => Promise<T>): Promise<T> {
    const sorted = [...new Set(keys)].sort();
    const holdFrom = (position: number): Promise<T> =>
      position === sorted.length ? work() : this.run(sorted[position], () => holdFrom(position + 1));
    return holdFrom(0);
  }
}
