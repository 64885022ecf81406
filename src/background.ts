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

/** What `onceAcrossInstances` needs of the leases (src/db/leases.ts). */
export interface JobLeases {
  take(job: string, ms: number): Promise<boolean>;
}

/**
 * `work`, run only by the instance that holds `job`'s lease: the lease is taken (or renewed) for `leaseMs` before a
 * round, and renewed while the round runs, so no two instances run the job at once and, with `leaseMs` the job's
 * interval, the deployment runs about one round per interval. Answers undefined when another instance holds it.
 */
export function onceAcrossInstances<T>(
  leases: JobLeases,
  job: string,
  leaseMs: number,
  work: () => Promise<T>,
): () => Promise<T | undefined> {
  return async () => {
    if (!(await leases.take(job, leaseMs))) return undefined;
    // A failed renewal is left to the next one: at worst the lease lapses and another instance runs a round too.
    const renewal = setInterval(() => void leases.take(job, leaseMs).catch(() => undefined), leaseMs / 2);
    renewal.unref();
    try {
      return await work();
    } finally {
      clearInterval(renewal);
    }
  };
}
