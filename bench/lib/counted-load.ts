// One autocannon load whose first seconds warm up and whose next seconds are counted.
//
// One run rather than a warm-up run and a counted run: a load whose requests take seconds (64 batches of 1000 runs)
// would otherwise start its count from nothing in flight, with the server still busy on the warm-up's abandoned
// requests, and count only the requests that fit whole in the span (half the batches' throughput at 64
// connections). Counted from within one run, the span begins and ends with requests under way, as in steady state.
import autocannon from 'autocannon';
import type { Probe, Usage } from './probe';

// Well above any request's latency here: a client-side timeout would drop a request the server still serves.
const REQUEST_TIMEOUT_SECONDS = 60;

export interface CountedLoad {
  /** 2xx responses completed in the counted span. */
  responses: number;
  /** Non-2xx responses, errors and timeouts in the counted span. */
  failures: number;
  /** Latency of the responses of the counted span, ms. */
  p50: number;
  p99: number;
  usage: Usage;
}

/** Nearest-rank percentile of a sorted sample; 0 for an empty one. */
export const percentile = (sorted: readonly number[], p: number) =>
  sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))];

/** Counts what completes from `warmUpSeconds` to `warmUpSeconds + countedSeconds`; `startProbe` opens the span. */
export function countedLoad(
  options: autocannon.Options,
  warmUpSeconds: number,
  countedSeconds: number,
  startProbe: () => Probe,
): Promise<CountedLoad> {
  const latencies: number[] = [];
  let failures = 0;
  let probe: Probe | undefined;
  let usage: Usage | undefined;
  return new Promise((resolve, reject) => {
    // The load runs a little past the span, so that the span ends with requests still under way.
    const instance = autocannon(
      { ...options, timeout: REQUEST_TIMEOUT_SECONDS, duration: warmUpSeconds + countedSeconds + 1 },
      (error) => {
        if (error) reject(error);
        else if (usage === undefined) reject(new Error('the load ended before its counted span'));
        else
          resolve({
            responses: latencies.length,
            failures,
            p50: percentile(latencies, 0.5),
            p99: percentile(latencies, 0.99),
            usage,
          });
      },
    );
    const counting = () => probe !== undefined && usage === undefined;
    instance.on('response', (_client, statusCode, _bytes, responseTime) => {
      if (!counting()) return;
      if (statusCode >= 200 && statusCode < 300) latencies.push(responseTime);
      else failures += 1;
    });
    instance.on('reqError', () => {
      if (counting()) failures += 1;
    });
    setTimeout(() => {
      const opened = startProbe();
      probe = opened;
      setTimeout(() => {
        usage = opened.stop();
        latencies.sort((a, b) => a - b);
      }, countedSeconds * 1000);
    }, warmUpSeconds * 1000);
  });
}
