// Runs the real service (`node --import tsx src/main.ts`) as a child process, for tests that must kill it.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BUSY_MACHINE_ENV } from './app';
import { childPostgres } from './postgres-database';

const ROOT = path.resolve(__dirname, '..', '..');
const READY_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 10_000;
// Enough of the child's last output to explain a start-up failure, no more.
const OUTPUT_TAIL_CHARS = 8_000;

export interface ChildService {
  url: string;
  child: ChildProcess;
  /** The end of what the process wrote (stdout and stderr), to explain a failure. */
  outputTail(): string;
  /** `kill -9`: no shutdown hook runs. Resolves once the process is gone. */
  kill(): Promise<void>;
  /** A graceful stop (SIGTERM), with SIGKILL if it hangs. Resolves once the process is gone. */
  stop(): Promise<void>;
}

/**
 * Only the settings a test chooses, not the jest worker's environment: an inherited INGEST_LOG_DIR would point the
 * child at stores the test does not own. CLICKHOUSE_URL is the exception: server mode (the jest project
 * `clickhouse-server`) sets it to the worker's own test ClickHouse server.
 */
function childEnvironment(dataDir: string, environment: Record<string, string>): NodeJS.ProcessEnv {
  const inherited = (name: string) => (process.env[name] ? { [name]: process.env[name] } : {});
  return {
    ...inherited('PATH'),
    ...inherited('HOME'),
    ...inherited('TMPDIR'),
    // CI points the suite at its Postgres server; without it the child uses PGlite under DATA_DIR.
    ...inherited('DATABASE_URL'),
    ...inherited('CLICKHOUSE_URL'),
    ...inherited('CLICKHOUSE_DATABASE'),
    // Test mode checks every response against the contract's schemas, in the child as in the in-process tests.
    NODE_ENV: 'test',
    DATA_DIR: dataDir,
    // The service binds a port of the system's choice and logs it (at info): a port chosen here and handed over could
    // be bound first by another test's service, since the system hands a freed port out again at once.
    PORT: '0',
    LOG_LEVEL: 'info',
    LOG_PRETTY: 'false',
    JWT_SECRET: 'child-service-test-secret-at-least-32-characters',
    // As in-process test apps: reads wait on a busy machine rather than be refused.
    ...BUSY_MACHINE_ENV,
    ...environment,
  };
}

const hasExited = (child: ChildProcess) => child.exitCode !== null || child.signalCode !== null;

function exited(child: ChildProcess): Promise<void> {
  if (hasExited(child)) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/** Keeps the end of what the child writes, for error messages. */
function recordOutputTail(child: ChildProcess): () => string {
  let tail = '';
  const keep = (chunk: Buffer) => {
    tail = (tail + chunk.toString('utf8')).slice(-OUTPUT_TAIL_CHARS);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  return () => tail;
}

/** The port the service listens on, from its "runwatch listening" log line; rejects on its exit or at the deadline. */
function listeningPort(child: ChildProcess, deadline: number, outputTail: () => string): Promise<number> {
  return new Promise((resolve, reject) => {
    let pending = '';
    const readLines = (chunk: Buffer) => {
      const lines = (pending + chunk.toString('utf8')).split('\n');
      pending = lines.pop()!;
      const listening = lines.find((line) => line.includes('"msg":"runwatch listening"'));
      if (listening) settle(() => resolve((JSON.parse(listening) as { port: number }).port));
    };
    const exitedEarly = () =>
      settle(() => reject(new Error(`the service exited (${child.exitCode ?? child.signalCode}):\n${outputTail()}`)));
    const timer = setTimeout(
      () =>
        settle(() => {
          child.kill('SIGKILL');
          reject(new Error(`the service did not listen in time:\n${outputTail()}`));
        }),
      deadline - Date.now(),
    );
    const settle = (outcome: () => void) => {
      clearTimeout(timer);
      child.stdout!.off('data', readLines);
      child.off('exit', exitedEarly);
      outcome();
    };
    child.stdout!.on('data', readLines);
    child.once('exit', exitedEarly);
  });
}

async function waitUntilReady(
  url: string,
  child: ChildProcess,
  outputTail: () => string,
  deadline: number,
): Promise<void> {
  while (Date.now() < deadline) {
    if (hasExited(child)) {
      throw new Error(`the service exited (${child.exitCode ?? child.signalCode}):\n${outputTail()}`);
    }
    const ready = await fetch(`${url}/readyz`).then(
      (res) => res.ok,
      () => false,
    );
    if (ready) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  child.kill('SIGKILL');
  throw new Error(`the service was not ready in time:\n${outputTail()}`);
}

/**
 * Starts the service on `dataDir` and a free port, with more settings if any; resolves once GET /readyz is 200.
 * `npmStart`: as a user starts it, `npm start` (the build in dist/), rather than from the sources. `readyTimeoutMs`:
 * how long its start may take.
 */
export async function startChildService(
  dataDir: string,
  environment: Record<string, string> = {},
  { npmStart = false, readyTimeoutMs = READY_TIMEOUT_MS } = {},
): Promise<ChildService> {
  const [command, args] = npmStart ? ['npm', ['start']] : [process.execPath, ['--import', 'tsx', 'src/main.ts']];
  const child = spawn(command, args, {
    cwd: ROOT,
    env: childEnvironment(dataDir, environment),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const outputTail = recordOutputTail(child);
  const deadline = Date.now() + readyTimeoutMs;
  const url = `http://127.0.0.1:${await listeningPort(child, deadline, outputTail)}`;
  await waitUntilReady(url, child, outputTail, deadline);
  return {
    url,
    child,
    outputTail,
    kill: async () => {
      child.kill('SIGKILL');
      await exited(child);
    },
    stop: async () => {
      if (hasExited(child)) return;
      const hung = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
      child.kill('SIGTERM');
      await exited(child);
      clearTimeout(hung);
    },
  };
}

/**
 * The service of a describe block that kills and restarts it: on a data directory and (on a Postgres server) a
 * database of its own, since the service's jobs take up every rule and delivery of theirs; after the block the
 * service is stopped and both are removed. `start` starts it, again on the same data after a kill.
 */
export function serviceOfBlock(prefix: string): { start(): Promise<ChildService> } {
  let dataDir: string;
  let postgres: Awaited<ReturnType<typeof childPostgres>>;
  let service: ChildService | undefined;
  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
    postgres = await childPostgres();
  });
  afterAll(async () => {
    await service?.stop();
    await postgres.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });
  return { start: async () => (service = await startChildService(dataDir, postgres.environment)) };
}
