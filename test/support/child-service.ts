// Runs the real service (`node --import tsx src/main.ts`) as a child process, for tests that must kill it.
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '..', '..');
const READY_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 10_000;
// Enough of the child's last output to explain a start-up failure, no more.
const OUTPUT_TAIL_CHARS = 8_000;

export interface ChildService {
  url: string;
  child: ChildProcess;
  /** `kill -9`: no shutdown hook runs. Resolves once the process is gone. */
  kill(): Promise<void>;
  /** A graceful stop (SIGTERM), with SIGKILL if it hangs. Resolves once the process is gone. */
  stop(): Promise<void>;
}

/** A loopback port nothing listens on right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/**
 * Only the settings a test chooses, not the jest worker's environment: an inherited CLICKHOUSE_URL or
 * INGEST_LOG_DIR would point the child at stores the test does not own.
 */
function childEnvironment(dataDir: string, port: number): NodeJS.ProcessEnv {
  const inherited = (name: string) => (process.env[name] ? { [name]: process.env[name] } : {});
  return {
    ...inherited('PATH'),
    ...inherited('HOME'),
    ...inherited('TMPDIR'),
    // CI points the suite at its Postgres server; without it the child uses PGlite under DATA_DIR.
    ...inherited('DATABASE_URL'),
    // Test mode checks every response against the contract's schemas, in the child as in the in-process tests.
    NODE_ENV: 'test',
    DATA_DIR: dataDir,
    PORT: String(port),
    LOG_LEVEL: 'warn',
    LOG_PRETTY: 'false',
    JWT_SECRET: 'child-service-test-secret-at-least-32-characters',
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
  const keep = (chunk: Buffer) => { tail = (tail + chunk.toString('utf8')).slice(-OUTPUT_TAIL_CHARS); };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  return () => tail;
}

async function waitUntilReady(url: string, child: ChildProcess, outputTail: () => string): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (hasExited(child)) {
      throw new Error(`the service exited (${child.exitCode ?? child.signalCode}):\n${outputTail()}`);
    }
    const ready = await fetch(`${url}/readyz`).then((res) => res.ok, () => false);
    if (ready) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  child.kill('SIGKILL');
  throw new Error(`the service was not ready within ${READY_TIMEOUT_MS} ms:\n${outputTail()}`);
}

/** Starts the service on `dataDir` and a free port; resolves once GET /readyz answers 200. */
export async function startChildService(dataDir: string): Promise<ChildService> {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: ROOT, env: childEnvironment(dataDir, port), stdio: ['ignore', 'pipe', 'pipe'],
  });
  const outputTail = recordOutputTail(child);
  const url = `http://127.0.0.1:${port}`;
  await waitUntilReady(url, child, outputTail);
  return {
    url,
    child,
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
