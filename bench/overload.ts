// npm run bench:overload — the service under overload (issue 22, docs/limits.md), started as a user starts it
// (`npm start`, the build in dist/) on an empty DATA_DIR; memory is the whole process tree's (npm and node).
//  1. idle: the tree's resident memory once started and quiet (goal ≤ 400 MiB);
//  2. eight ~10 MB OTLP protobuf exports of 115,000 chat spans at once: every one answered (200, or 503 with
//     Retry-After) within 30 s, and the tree's peak resident memory (goal ≤ 1 GiB);
//  3. ingest alone (8 clients posting batches of whole runs) for 20 s: its rate, the reference;
//  4. the same ingest beside 200 connections of dashboard reads for 60 s: ingest keeps ≥ 80% of its rate alone, every
//     read is answered within 2 s (200, or 503 with Retry-After), and the reads served a second.
// The load generators run in this process, on the same machine as the service.
// BENCH_READ_CONNECTIONS (200) sets the reads' connections: with 0, step 4 is ingest alone again, which shows how
// much its rate drifts from step 3 with nothing beside it. BENCH_SERVICE_LOG names a file for the service's log
// (warnings and errors): what a failed answer was.
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { bigExport } from './lib/big-export';
import { percentile } from './lib/counted-load';
import { cpuSecondsOf, createProjectKey } from './lib/service-process';
import { batchBody, wholeRunItems } from './lib/whole-runs';

const ROOT = path.resolve(__dirname, '..');
const DATA_DIR = path.resolve(process.env.BENCH_DATA_DIR ?? '.bench-data/overload');
const PORT = 18_084;
const URL = `http://127.0.0.1:${PORT}`;
const GOALS = { idleMiB: 400, peakMiB: 1024, exportMs: 30_000, ingestShare: 0.8, readMs: 2000 };
const EXPORTS = 8;
const INGEST_CLIENTS = 8;
const RUNS_PER_BATCH = 10;
const READ_CONNECTIONS = Number(process.env.BENCH_READ_CONNECTIONS ?? 200);
const SERVICE_LOG = process.env.BENCH_SERVICE_LOG;
const INGEST_ALONE_SECONDS = 20;
const MIXED_SECONDS = 60;

/** A process and all its descendants, from /proc. */
function processTree(rootPid: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const parent = Number(stat.replace(/^.*\) /s, '').split(' ')[1]);
      children.set(parent, [...(children.get(parent) ?? []), Number(entry)]);
    } catch {
      // The process ended meanwhile.
    }
  }
  const tree: number[] = [];
  for (const pending = [rootPid]; pending.length > 0;) {
    const pid = pending.pop()!;
    tree.push(pid);
    pending.push(...(children.get(pid) ?? []));
  }
  return tree;
}

const readProc = (pid: number, file: string) => {
  try {
    return fs.readFileSync(`/proc/${pid}/${file}`, 'utf8');
  } catch {
    return '';
  }
};

/** The tree's resident memory in MiB: the sum of its processes' VmRSS. */
const treeRssMiB = (rootPid: number) =>
  processTree(rootPid).reduce((kib, pid) => kib + Number(/VmRSS:\s+(\d+)/.exec(readProc(pid, 'status'))?.[1] ?? 0), 0) /
  1024;

/**
 * The tree's resident pages counted once, in MiB: each process's anonymous pages, and the pages of each mapped file
 * once (npm and the service are both /usr/bin/node: the sum of VmRSS counts its pages twice).
 */
function treeDistinctMiB(rootPid: number): number {
  let anonymous = 0;
  const files = new Map<string, number>();
  for (const pid of processTree(rootPid)) {
    const perFile = new Map<string, number>();
    let mapping = '';
    for (const line of readProc(pid, 'smaps').split('\n')) {
      const header = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
      if (header) mapping = header[1].startsWith('/') ? header[1] : '';
      const rss = /^Rss:\s+(\d+)/.exec(line);
      const anon = /^Anonymous:\s+(\d+)/.exec(line);
      if (rss && mapping) perFile.set(mapping, (perFile.get(mapping) ?? 0) + Number(rss[1]));
      if (anon) {
        anonymous += Number(anon[1]);
        if (mapping) perFile.set(mapping, (perFile.get(mapping) ?? 0) - Number(anon[1]));
      }
    }
    for (const [file, kib] of perFile) files.set(file, Math.max(files.get(file) ?? 0, kib));
  }
  return (anonymous + [...files.values()].reduce((sum, kib) => sum + kib, 0)) / 1024;
}

/** Samples the tree's memory every 100 ms until stopped; returns the peak. */
function samplePeak(rootPid: number) {
  let peak = 0;
  const timer = setInterval(() => (peak = Math.max(peak, treeRssMiB(rootPid))), 100);
  return () => {
    clearInterval(timer);
    return peak;
  };
}

async function startService() {
  const child = spawn('npm', ['start'], {
    cwd: ROOT,
    // A read is answered (200, or 503 with Retry-After) within 1.5 s of its arrival, and waits at most a second of it
    // for the flush of what it must see (docs/limits.md): every read answered in 2 s.
    env: {
      ...process.env,
      DATA_DIR,
      PORT: String(PORT),
      LOG_LEVEL: 'warn',
      LOG_PRETTY: 'false',
      READ_FLUSH_WAIT_MS: '1000',
      READ_TIMEOUT_MS: '1500',
    },
    stdio: ['ignore', SERVICE_LOG ? fs.openSync(SERVICE_LOG, 'w') : 'ignore', 'inherit'],
  });
  for (const deadline = Date.now() + 60_000; Date.now() < deadline;) {
    const ready = await fetch(`${URL}/readyz`).then(
      (res) => res.ok,
      () => false,
    );
    if (ready) return child;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error('the service did not become ready');
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function bigExports(key: string, bodies: readonly Buffer[]) {
  const startedAt = Date.now();
  return Promise.all(
    bodies.map((body) =>
      fetch(`${URL}/v1/traces`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/x-protobuf' },
        body,
        signal: AbortSignal.timeout(120_000),
      }).then(
        async (res) => {
          await res.arrayBuffer();
          return { status: res.status, retryAfter: res.headers.get('retry-after'), ms: Date.now() - startedAt };
        },
        (error: Error) => ({ status: 0, retryAfter: null, ms: Date.now() - startedAt, error: error.message }),
      ),
    ),
  );
}

/** Ingest clients posting batches of whole runs back to back until `until`; counts the acknowledged requests. */
async function ingest(key: string, until: number) {
  const body = batchBody(wholeRunItems(RUNS_PER_BATCH, Date.now()));
  let acknowledged = 0;
  let refused = 0;
  await Promise.all(
    Array.from({ length: INGEST_CLIENTS }, async () => {
      while (Date.now() < until) {
        const res = await fetch(`${URL}/ingest/agent/runs/batch`, {
          method: 'POST',
          headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
          body,
        }).catch(() => undefined);
        await res?.arrayBuffer();
        if (res?.ok) acknowledged += 1;
        else refused += 1;
      }
    }),
  );
  return { acknowledged, refused };
}

/** CPU seconds used so far by the tree's processes, all their threads. */
const treeCpuSeconds = (rootPid: number) =>
  processTree(rootPid).reduce((sum, pid) => {
    try {
      const { main, others } = cpuSecondsOf(pid);
      return sum + main + others;
    } catch {
      return sum; // The process ended meanwhile.
    }
  }, 0);

/**
 * Waits until the service is quiet — under 5% of a core over a second, its engine's merges of the exports' runs done
 * — (at most 2 minutes), so that the reference rate of ingest alone is not measured beside them.
 */
async function untilQuiet(rootPid: number) {
  for (const deadline = Date.now() + 120_000; Date.now() < deadline;) {
    const before = treeCpuSeconds(rootPid);
    await sleep(1000);
    if (treeCpuSeconds(rootPid) - before < 0.05) return;
  }
}

/** The dashboard's reads, in turn: the summary, the run list, the health of agents, a time series, the usage. */
const READS = ['summary', 'runs', 'health', 'timeseries', 'usage?by=agent'];

async function reads(projectId: string, token: string, until: number) {
  const latencies: number[] = [];
  const statuses = new Map<string, number>();
  const slowest = new Map<string, number>();
  let missingRetryAfter = 0;
  await Promise.all(
    Array.from({ length: READ_CONNECTIONS }, async (_, connection) => {
      for (let i = connection; Date.now() < until; i += 1) {
        const startedAt = Date.now();
        const res = await fetch(`${URL}/projects/${projectId}/agent/${READS[i % READS.length]}`, {
          headers: { Authorization: `Bearer ${token}` },
          signal: AbortSignal.timeout(30_000),
        }).catch(() => undefined);
        await res?.arrayBuffer();
        latencies.push(Date.now() - startedAt);
        const status = String(res?.status ?? 'error');
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
        slowest.set(status, Math.max(slowest.get(status) ?? 0, Date.now() - startedAt));
        if (res?.status === 503 && !res.headers.get('retry-after')) missingRetryAfter += 1;
        // A refused read is asked again after the Retry-After it was given, as the dashboard does (src/dashboard/web/
        // api.ts), not at once.
        if (res?.status === 503) await sleep(1000 * (Number(res.headers.get('retry-after')) || 1));
      }
    }),
  );
  return { latencies: latencies.sort((a, b) => a - b), statuses, slowest, missingRetryAfter };
}

async function main(): Promise<void> {
  execFileSync('npm', ['run', 'build'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
  fs.rmSync(DATA_DIR, { recursive: true, force: true });
  // Built before any connection is open: building them holds the event loop for seconds, long enough for the service
  // to close an idle keep-alive connection the client would then reuse (EPIPE).
  const bodies = Array.from({ length: EXPORTS }, (_, i) => bigExport(`overload-export-${i}`));
  const loadBefore = os.loadavg()[0];
  const service = await startService();
  const pid = service.pid!;
  const { key, projectId, token } = await createProjectKey(URL);
  await sleep(5000);
  const idle = treeRssMiB(pid);
  const idleDistinct = treeDistinctMiB(pid);
  const cores = os.cpus().length;
  console.log(`\noverload on an empty DATA_DIR (load average before: ${loadBefore.toFixed(1)}; ${cores} cores)`);
  console.log(
    `idle                 ${idle.toFixed(0)} MiB, npm start's process tree (its pages counted once: ` +
      `${idleDistinct.toFixed(0)} MiB)   (goal ≤ ${GOALS.idleMiB})`,
  );

  const stopSampling = samplePeak(pid);
  const answers = await bigExports(key, bodies);
  const peak = stopSampling();
  const slowest = Math.max(...answers.map((answer) => answer.ms));
  const byStatus = answers.reduce<Record<string, number>>(
    (counts, answer) => ({ ...counts, [answer.status]: (counts[answer.status] ?? 0) + 1 }),
    {},
  );
  console.log(
    `8 × 10 MB exports    answers ${JSON.stringify(byStatus)}, slowest ${(slowest / 1000).toFixed(1)} s` +
      `   (goal: 200 or 503 each, ≤ ${GOALS.exportMs / 1000} s); 503s without Retry-After: ` +
      `${answers.filter((answer) => answer.status === 503 && !answer.retryAfter).length}`,
  );
  console.log(
    `                     peak ${peak.toFixed(0)} MiB beside idle ${idle.toFixed(0)}   (goal ≤ ${GOALS.peakMiB})`,
  );
  const health = await fetch(`${URL}/healthz`).then((res) => res.status);
  const alive = service.exitCode === null ? 'alive' : 'gone';
  console.log(`                     after: /healthz ${health}, process ${alive}`);
  await untilQuiet(pid);

  const alone = await ingest(key, Date.now() + INGEST_ALONE_SECONDS * 1000);
  const aloneRate = alone.acknowledged / INGEST_ALONE_SECONDS;
  console.log(
    `ingest alone         ${aloneRate.toFixed(0)} requests/s (${RUNS_PER_BATCH} runs each), refused ${alone.refused}`,
  );

  const until = Date.now() + MIXED_SECONDS * 1000;
  const [mixed, read] = await Promise.all([ingest(key, until), reads(projectId, token, until)]);
  const mixedRate = mixed.acknowledged / MIXED_SECONDS;
  const served = read.statuses.get('200') ?? 0;
  console.log(
    `ingest beside reads  ${mixedRate.toFixed(0)} requests/s = ${((100 * mixedRate) / aloneRate).toFixed(0)}% ` +
      `of alone (${aloneRate.toFixed(0)})   (goal ≥ ${GOALS.ingestShare * 100}%), refused ${mixed.refused}`,
  );
  console.log(
    `reads (${READ_CONNECTIONS} conns)    ${(served / MIXED_SECONDS).toFixed(1)} served/s; answers ` +
      `${JSON.stringify(Object.fromEntries(read.statuses))}; p50 ${percentile(read.latencies, 0.5)} ms, ` +
      `p99 ${percentile(read.latencies, 0.99)} ms, max ${read.latencies.at(-1)} ms ` +
      `(by answer ${JSON.stringify(Object.fromEntries(read.slowest))})   (goal ≤ ${GOALS.readMs} ms); ` +
      `503s without Retry-After: ${read.missingRetryAfter}`,
  );
  service.kill('SIGTERM');
  await new Promise((resolve) => service.once('exit', resolve));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
