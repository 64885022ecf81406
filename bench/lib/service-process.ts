// Starts runwatch (or any server script) as its own process on a loopback port, for benchmarks.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '..', '..');

export interface ServerProcess {
  url: string;
  child: ChildProcess;
  /** The embedded ClickHouse's directory (`<DATA_DIR>/clickhouse`), for servers that have one. */
  engineDir?: string;
  /** Resident set size of the server process, in MiB. */
  rssMiB(): number;
  /**
   * CPU seconds used so far by the process's main (JavaScript) thread and by all its other threads (the engine's,
   * libuv's, GC helpers).
   */
  cpuSeconds(): { main: number; others: number };
  stop(): Promise<void>;
}

// Polled often: the footprint bench times the start with it.
const UP_POLL_MS = 10;
const UP_TIMEOUT_MS = 30_000;

async function waitUntilUp(url: string, child: ChildProcess): Promise<void> {
  for (const deadline = Date.now() + UP_TIMEOUT_MS; Date.now() < deadline;) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}`);
    const up = await fetch(url).then(
      (res) => res.ok,
      () => false,
    );
    if (up) return;
    await new Promise((resolve) => setTimeout(resolve, UP_POLL_MS));
  }
  throw new Error(`server at ${url} did not come up`);
}

const CLOCK_TICKS_PER_SECOND = 100;

/** utime + stime, from a /proc stat file (fields 14 and 15, counted after the parenthesised name). */
function cpuSecondsIn(statPath: string): number {
  const fields = fs
    .readFileSync(statPath, 'utf8')
    .replace(/^.*\) /s, '')
    .split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND;
}

/** The process's total (threads that ended included) less its main thread's is what all its other threads used. */
export function cpuSecondsOf(pid: number): { main: number; others: number } {
  const main = cpuSecondsIn(`/proc/${pid}/task/${pid}/stat`);
  return { main, others: cpuSecondsIn(`/proc/${pid}/stat`) - main };
}

/** The service's command line after node, as `npm start` runs it (package.json). */
export const SERVICE_ARGS = ['--liftoff-only', 'dist/main.js'];

export async function startProcess(
  args: string[],
  env: Record<string, string>,
  port: number,
  readyPath: string,
): Promise<ServerProcess> {
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { ...process.env, ...env, PORT: String(port) },
    stdio: ['ignore', process.env.BENCH_SERVER_STDOUT ? 'inherit' : 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  await waitUntilUp(`${url}${readyPath}`, child);
  return {
    url,
    child,
    rssMiB: () => {
      const status = fs.readFileSync(`/proc/${child.pid}/status`, 'utf8');
      return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
    },
    cpuSeconds: () => cpuSecondsOf(child.pid!),
    stop: () =>
      new Promise((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

/**
 * Waits until the server's JavaScript thread has been nearly idle for half a second and its ingest log is flushed
 * (the engine may go on merging): what a load left in flight or in the log when it stopped is stored by then, and
 * does not weigh on the next measurement.
 */
export async function waitUntilIdle(server: ServerProcess, maxSeconds = 60): Promise<void> {
  const deadline = Date.now() + maxSeconds * 1000;
  for (let before = server.cpuSeconds().main; Date.now() < deadline;) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    const after = server.cpuSeconds().main;
    if (after - before < 0.05 && (await ingestBacklogRows(server)) === 0) return;
    before = after;
  }
}

/** Rows the service has acknowledged and not yet flushed into ClickHouse (0 for a service without an ingest log). */
async function ingestBacklogRows(server: ServerProcess): Promise<number> {
  const ready = (await fetch(`${server.url}/readyz`).then(
    (res) => res.json(),
    () => ({}),
  )) as { ingest_backlog?: { rows: number } };
  return ready.ingest_backlog?.rows ?? 0;
}

/**
 * The real service, embedded stores under `dataDir`, as it is deployed: compiled (`npm run build`, dist/main.js), not
 * through tsx, whose per-call helpers cost the start path ~15% of its JavaScript time.
 */
export async function startRunwatch(dataDir: string, port: number): Promise<ServerProcess> {
  execFileSync('npx', ['tsc', '-p', 'tsconfig.build.json'], { cwd: ROOT, stdio: 'inherit' });
  const server = await startProcess(
    [...(process.env.BENCH_NODE_FLAGS ? process.env.BENCH_NODE_FLAGS.split(' ') : []), ...SERVICE_ARGS],
    { DATA_DIR: dataDir, LOG_LEVEL: 'warn', LOG_PRETTY: 'false' },
    port,
    '/readyz',
  );
  return { ...server, engineDir: path.join(dataDir, 'clickhouse') };
}

async function post<T>(url: string, body: unknown, token?: string): Promise<T> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${url}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

/** Registers a user through the API and returns a project and its API key. */
export async function createProjectKey(baseUrl: string) {
  const auth = await post<{ token: string; organizations: { id: string }[] }>(`${baseUrl}/auth/register`, {
    email: `bench-${Date.now()}-${Math.random()}@example.com`,
    password: 'benchmark-password',
  });
  const orgId = auth.organizations[0].id;
  const project = await post<{ id: string }>(
    `${baseUrl}/admin/orgs/${orgId}/projects`,
    { name: `bench-${Date.now()}` },
    auth.token,
  );
  const key = await post<{ key: string }>(
    `${baseUrl}/admin/orgs/${orgId}/projects/${project.id}/api-keys`,
    { name: 'bench' },
    auth.token,
  );
  return { token: auth.token, orgId, projectId: project.id, key: key.key };
}
