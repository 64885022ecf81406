// Batch ingest end to end: from the first batch request until the summary report counts every run acknowledged.
import { percentile } from './counted-load';
import { startProbe, type Usage } from './probe';
import type { ServerProcess } from './service-process';

export interface EndToEndOptions {
  /** A fresh project, so that the summary counts only the runs sent here. */
  projectId: string;
  key: string;
  /** One batch of whole runs without ids: each send is new runs. */
  body: string;
  batches: number;
  concurrency: number;
  /** The summary's window; every run sent starts inside it. */
  window: { from: Date; to: Date };
  /** How long to wait for the summary to count every run before giving up. */
  timeoutSeconds: number;
}

export interface EndToEndFigure {
  acknowledged: number;
  /** Batches that failed (not 2xx, or the request failed). */
  failures: number;
  /** Runs the last summary call counted. */
  counted: number;
  /** Seconds from the first request until the last acknowledgement, and until the summary counted every run. */
  acknowledgedAt: number;
  countedAt: number;
  summaryCalls: number;
  /** Latency of the batch requests, ms. */
  p50: number;
  p99: number;
  usage: Usage;
}

/**
 * Sends the batches, `concurrency` at a time; resolves with the runs acknowledged, the failures and each request's
 * latency.
 */
async function sendBatches(url: string, { key, body, batches, concurrency }: EndToEndOptions) {
  const latencies: number[] = [];
  let sent = 0;
  let acknowledged = 0;
  let failures = 0;
  const sender = async () => {
    while (sent < batches) {
      sent += 1;
      const started = performance.now();
      try {
        const res = await fetch(`${url}/ingest/agent/runs/batch`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
          body,
        });
        const answer = (await res.json()) as { results?: { id?: string }[] };
        if (!res.ok) throw new Error(`batch: ${res.status}`);
        // Items fail one by one: only those answered with an id are acknowledged.
        acknowledged += (answer.results ?? []).filter((result) => result.id !== undefined).length;
      } catch {
        failures += 1;
      }
      latencies.push(performance.now() - started);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, sender));
  return { acknowledged, failures, latencies: latencies.sort((a, b) => a - b) };
}

/** The runs the summary counts; 0 when it answers 503 (its wait for the flush ran out while the backlog drains). */
async function summaryTotalRuns(url: string, { projectId, key, window }: EndToEndOptions): Promise<number> {
  const query = new URLSearchParams({ from: window.from.toISOString(), to: window.to.toISOString() });
  const res = await fetch(`${url}/projects/${projectId}/agent/summary?${query}`, {
    headers: { authorization: `Bearer ${key}` },
  });
  if (res.status === 503) return 0;
  if (!res.ok) throw new Error(`summary: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { current: { total_runs: number } }).current.total_runs;
}

export async function batchEndToEnd(server: ServerProcess, options: EndToEndOptions): Promise<EndToEndFigure> {
  const probe = startProbe(server.cpuSeconds, server.engineDir);
  const { acknowledged, failures, latencies } = await sendBatches(server.url, options);
  const acknowledgedAt = probe.elapsedSeconds();
  // A summary waits for the flush of what was acknowledged before it, so calls follow one another without a pause;
  // the short one only keeps a summary that does not wait from spinning.
  let counted = 0;
  let summaryCalls = 0;
  while (counted < acknowledged && probe.elapsedSeconds() < acknowledgedAt + options.timeoutSeconds) {
    if (summaryCalls > 0) await new Promise((resolve) => setTimeout(resolve, 20));
    counted = await summaryTotalRuns(server.url, options);
    summaryCalls += 1;
  }
  const usage = probe.stop();
  return {
    acknowledged,
    failures,
    counted,
    acknowledgedAt,
    countedAt: usage.seconds,
    summaryCalls,
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
    usage,
  };
}
