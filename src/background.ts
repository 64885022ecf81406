// Background work: a job run now and again after each interval, and a bound on how much runs at once.

/**
 * Runs `work` now and then `intervalMs` after each run ends, so that two runs never overlap; a failed run is
 * reported to `onFailure` and the next one comes all the same. The timer does not keep the process alive.
 * Returns a function that stops the job and waits for a run in progress.
 */
export function runEvery(
  intervalMs: number,
  work: () => Promise<unknown>,
  onFailure: (error: unknown) => void,
): () => Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let running: Promise<void> = Promise.resolve();
  const run = () => {
    running = work()
      .then(() => undefined, onFailure)
      .finally(schedule);
  };
  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(run, intervalMs);
    timer.unref();
  };
  run();
  return async () => {
    stopped = true;
    if (timer) clearTimeout(timer);
    await running;
  };
}

/** Maps `items` through `work`, at most `limit` at a time; the results keep the items' order. */
export async function mapLimited<T, R>(
  items: readonly T[],
  limit: number,
  work: (item: T) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  return results;
}
