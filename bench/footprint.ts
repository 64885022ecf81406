// npm run bench:footprint — what the service costs to keep running, with its embedded stores on an empty DATA_DIR:
// its start (until /healthz, then /readyz, answer 200), its memory idle and after 20,000 runs and a summary, and its
// stop (from SIGTERM until the process is gone). It runs the built service (`npm run build`), as `npm start` does.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { batchEndToEnd } from './lib/batch-end-to-end';
import { createProjectKey, SERVICE_ARGS, startProcess, waitUntilIdle, type ServerProcess } from './lib/service-process';
import { batchBody, wholeRunItems } from './lib/whole-runs';

const ROOT = path.resolve(__dirname, '..');
const DATA_DIR = path.resolve(process.env.BENCH_DATA_DIR ?? '.bench-data/footprint');
const PORT = 18_083;
const RUNS = 20_000;
const BATCH = 1000;
const GOALS = { startSeconds: 3, idleMiB: 400, loadedMiB: 700, stopSeconds: 3 };
// Idle is measured this long after the start: a service idles for hours, and its first seconds still hold the pages
// that only its start touched (it lets them go 5 s after listening: src/startup-pages.ts). Its memory once ready is
// printed too.
const SETTLED_MS = 10_000;

/** A process's memory from /proc, in MiB: resident (anonymous and file-backed pages) and its peak. */
function memoryOf(pid: number) {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const mib = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0) / 1024;
  return { rss: mib('VmRSS'), anonymous: mib('RssAnon'), file: mib('RssFile'), peak: mib('VmHWM') };
}

async function secondsUntilReady(url: string, startedAt: number): Promise<number> {
  while (
    !(await fetch(`${url}/readyz`).then(
      (res) => res.ok,
      () => false,
    ))
  )
    await new Promise((resolve) => setTimeout(resolve, 10));
  return (performance.now() - startedAt) / 1000;
}

async function secondsToStop(server: ServerProcess): Promise<number> {
  const startedAt = performance.now();
  await server.stop();
  return (performance.now() - startedAt) / 1000;
}

/** 20,000 whole runs through the batch API, 1,000 a call, then the summary that counts them all. */
async function ingestRuns(server: ServerProcess): Promise<void> {
  const { projectId, key } = await createProjectKey(server.url);
  const now = Date.now();
  const figure = await batchEndToEnd(server, {
    projectId,
    key,
    body: batchBody(wholeRunItems(BATCH, now)),
    batches: RUNS / BATCH,
    concurrency: 2,
    window: { from: new Date(now - 3_600_000), to: new Date(now + 3_600_000) },
    timeoutSeconds: 60,
  });
  if (figure.counted !== RUNS) throw new Error(`the summary counted ${figure.counted} runs of ${RUNS}`);
}

const formatMemory = ({ rss, anonymous, file }: ReturnType<typeof memoryOf>) =>
  `${rss.toFixed(0)} MiB (anonymous ${anonymous.toFixed(0)}, file-backed ${file.toFixed(0)})`;

async function main(): Promise<void> {
  execFileSync('npm', ['run', 'build'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
  fs.rmSync(DATA_DIR, { recursive: true, force: true });
  const loadBefore = os.loadavg()[0];
  const startedAt = performance.now();
  const server = await startProcess(
    SERVICE_ARGS,
    { DATA_DIR, LOG_LEVEL: 'warn', LOG_PRETTY: 'false' },
    PORT,
    '/healthz',
  );
  const healthzSeconds = (performance.now() - startedAt) / 1000;
  const readyzSeconds = await secondsUntilReady(server.url, startedAt);
  await waitUntilIdle(server);
  const ready = memoryOf(server.child.pid!);
  await new Promise((resolve) => setTimeout(resolve, startedAt + SETTLED_MS - performance.now()));
  const idle = memoryOf(server.child.pid!);
  await ingestRuns(server);
  await waitUntilIdle(server);
  const loaded = memoryOf(server.child.pid!);
  const stopSeconds = await secondsToStop(server);

  console.log(`\nfootprint on an empty DATA_DIR (load average before: ${loadBefore.toFixed(1)})`);
  console.log(
    `start     /healthz 200 after ${healthzSeconds.toFixed(2)} s, /readyz 200 after ${readyzSeconds.toFixed(2)} s` +
      `   (goal ≤ ${GOALS.startSeconds} s)`,
  );
  console.log(`ready     ${formatMemory(ready)}`);
  console.log(
    `idle      ${formatMemory(idle)}, ${SETTLED_MS / 1000} s after the start   (goal ≤ ${GOALS.idleMiB} MiB)`,
  );
  console.log(
    `${RUNS} runs and a summary   ${formatMemory(loaded)}, peak ${loaded.peak.toFixed(0)} MiB` +
      `   (goal ≤ ${GOALS.loadedMiB} MiB)`,
  );
  console.log(`stop      SIGTERM to exit ${stopSeconds.toFixed(2)} s   (goal ≤ ${GOALS.stopSeconds} s)`);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
