// A full disk under DATA_DIR, for real (contract §1): the service on a small tmpfs with its embedded stores and ingest
// log, the free space then taken by a file. Writes get 503 with Retry-After (embedded Postgres included, never 500),
// /readyz says not ready, nothing refused is half-written, nothing acknowledged is lost, and all is back once there
// is room. Needs `mount` (root, or CAP_SYS_ADMIN); without it the test is skipped, and the readiness probe's
// failure is still tested in-process (test/http/readiness.test.ts).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createProjectKey } from '../../bench/lib/service-process';
import { startChildService, type ChildService } from '../support/child-service';

const FILESYSTEM_SIZE = '192m';
// Writes that fill the embedded Postgres's pages until one needs a new one, which the full disk refuses.
const MAX_WRITES = 300;

function mountTmpfs(directory: string, size: string): boolean {
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', directory], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

const mountPoint = fs.mkdtempSync(path.join(os.tmpdir(), 'runwatch-full-disk-'));
const mounted = mountTmpfs(mountPoint, FILESYSTEM_SIZE);
if (!mounted) fs.rmSync(mountPoint, { recursive: true });

// Attempts at taking the free space: each fails only when the service wrote meanwhile (a few in a thousand).
const MAX_FILL_ATTEMPTS = 50;

/**
 * Takes every free block of the filesystem, into filler files. The service writes while this runs (its flusher,
 * its embedded stores), so the room free when measured may be gone a moment later and `fallocate` refuse it
 * (ENOSPC): then the room left is measured again and taken by another file, until none is left.
 */
function fillDisk(): string[] {
  const fillers: string[] = [];
  for (let attempt = 0; attempt < MAX_FILL_ATTEMPTS; attempt += 1) {
    const { bavail, bsize } = fs.statfsSync(mountPoint);
    if (bavail === 0) return fillers;
    const filler = path.join(mountPoint, `filler-${attempt}`);
    try {
      execFileSync('fallocate', ['-l', String(bavail * bsize), filler], { stdio: 'pipe' });
      fillers.push(filler);
    } catch (error) {
      if (!String((error as { stderr?: Buffer }).stderr).includes('No space left on device')) throw error;
      fs.rmSync(filler, { force: true });
    }
  }
  throw new Error(`the filesystem still had free blocks after ${MAX_FILL_ATTEMPTS} attempts at filling it`);
}

interface Answer {
  status: number;
  retryAfter: string | null;
  /** An error, a created run or project, or a list (read as one, below). */
  body: { error?: { code: string }; id?: string; name?: string };
}

(mounted ? describe : describe.skip)('a full disk (tmpfs)', () => {
  let service: ChildService | undefined;

  afterAll(async () => {
    await service?.stop();
    execFileSync('umount', [mountPoint]);
    fs.rmSync(mountPoint, { recursive: true });
  });

  async function call(method: string, pathname: string, body?: unknown, token?: string): Promise<Answer> {
    const res = await fetch(`${service!.url}${pathname}`, {
      method,
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return {
      status: res.status,
      retryAfter: res.headers.get('retry-after'),
      body: (await res.json()) as Answer['body'],
    };
  }

  const expectUnavailable = (answer: Answer) => {
    expect({ status: answer.status, code: answer.body.error?.code }).toEqual({ status: 503, code: 'unavailable' });
    expect(Number(answer.retryAfter)).toBeGreaterThan(0);
  };

  /** Sends `write(i)` until one is refused; the answers acknowledged, and the refusal. */
  async function writeUntilRefused(write: (i: number) => Promise<Answer>, acknowledgedStatus: number) {
    const acknowledged: Answer[] = [];
    for (let i = 0; i < MAX_WRITES; i += 1) {
      const answer = await write(i);
      if (answer.status !== acknowledgedStatus) return { acknowledged, refused: answer };
      acknowledged.push(answer);
    }
    throw new Error(`${MAX_WRITES} writes went through on a full disk`);
  }

  it('is 503 with Retry-After for writes and /readyz; loses nothing acknowledged; recovers with room', async () => {
    // The service's own Postgres (PGlite) under DATA_DIR, on the small filesystem.
    service = await startChildService(path.join(mountPoint, 'data'), {
      DATABASE_URL: '',
      AUTH_RATE_LIMIT_PER_MINUTE: '100000',
    });
    const { token, orgId, projectId, key } = await createProjectKey(service.url);
    const before = await call('POST', '/ingest/agent/runs', { agent_name: 'before' }, key);
    expect(before.status).toBe(201);

    // Writes into blocks already allocated still succeed (and are kept); the first that needs a new one is refused.
    const fillers = fillDisk();
    expectUnavailable(await call('GET', '/readyz'));
    const starts = await writeUntilRefused(
      () => call('POST', '/ingest/agent/runs', { agent_name: 'during' }, key),
      201,
    );
    expectUnavailable(starts.refused);
    const projects = await writeUntilRefused(
      (i) => call('POST', `/admin/orgs/${orgId}/projects`, { name: `during-${i}` }, token),
      201,
    );
    expectUnavailable(projects.refused);
    const refusedName = `during-${projects.acknowledged.length}`;

    for (const filler of fillers) fs.rmSync(filler);
    expect((await call('GET', '/readyz')).status).toBe(200);
    const after = await call('POST', '/ingest/agent/runs', { agent_name: 'after' }, key);
    expect(after.status).toBe(201);
    expect((await call('POST', `/admin/orgs/${orgId}/projects`, { name: refusedName }, token)).status).toBe(201);

    // Every acknowledged write is there; the refused project was not half-made (its name was free again).
    const listed = await call('GET', `/admin/orgs/${orgId}/projects`, undefined, token);
    const names = (listed.body as unknown as { name: string }[]).map((project) => project.name);
    expect(names).toEqual(
      expect.arrayContaining([...projects.acknowledged.map((answer) => answer.body.name), refusedName]),
    );
    const window = new URLSearchParams({
      from: new Date(Date.now() - 3_600_000).toISOString(),
      to: new Date(Date.now() + 3_600_000).toISOString(),
    });
    const runs = await call('GET', `/projects/${projectId}/agent/runs?${window}`, undefined, key);
    const acknowledgedRuns = [before, ...starts.acknowledged, after].map((answer) => answer.body.id);
    expect((runs.body as unknown as { id: string }[]).map((run) => run.id).sort()).toEqual(acknowledgedRuns.sort());
  }, 90_000);
});
