// The service's thread pool (src/threadpool.ts): Node's pool runs the ingest log's file writes beside the embedded
// engine's statements, each of which holds a thread while it runs, so the service starts it with 16 threads; a size
// the environment sets is kept.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startChildService } from '../support/child-service';

/** How many threads of Node's pool (libuv's, all started at once) a process has. */
const poolThreads = (pid: number) =>
  fs
    .readdirSync(`/proc/${pid}/task`)
    .filter((task) => fs.readFileSync(`/proc/${pid}/task/${task}/comm`, 'utf8').trim() === 'libuv-worker').length;

it.each([
  [{}, 16],
  [{ UV_THREADPOOL_SIZE: '6' }, 6],
])('with %j in its environment, the service runs %d threads in its pool', async (environment, threads) => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'runwatch-threadpool-'));
  const service = await startChildService(dataDir, environment);
  try {
    expect(poolThreads(service.child.pid!)).toBe(threads);
  } finally {
    await service.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
});
