// The pages of files that only the start touched leave the service's resident set a few seconds after it listens
// (src/startup-pages.ts), and the service goes on working: a page used again comes back from the page cache.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { isCleanFileMapping, readMappings } from '../../src/startup-pages';
import { startChildService, type ChildService } from '../support/child-service';
import { createProjectKey } from '../../bench/lib/service-process';
import { batchBody, wholeRunItems } from '../../bench/lib/whole-runs';

const RELEASED_LINE = 'pages touched only at start-up released';

/** MiB resident in the process's mappings of files that hold no page of their own. */
const cleanFileMiB = (pid: number) =>
  readMappings(fs.readFileSync(`/proc/${pid}/smaps`, 'utf8'))
    .filter(isCleanFileMapping)
    .reduce((sum, mapping) => sum + mapping.residentKiB / 1024, 0);

async function untilLogged(service: ChildService, line: string, timeoutMs = 20_000) {
  for (const deadline = Date.now() + timeoutMs; !service.outputTail().includes(line);) {
    if (Date.now() > deadline) throw new Error(`"${line}" not logged:\n${service.outputTail()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('readMappings and isCleanFileMapping', () => {
  const smaps = [
    '7f0000000000-7f0000100000 r-xp 00000000 fe:01 123 /usr/lib/libchdb.so',
    'Rss:                 512 kB',
    'Anonymous:             0 kB',
    '7f0000100000-7f0000200000 r--p 00100000 fe:01 123 /usr/lib/libchdb.so',
    'Rss:                  64 kB',
    'Anonymous:            16 kB',
    '7f0000200000-7f0000300000 rw-p 00200000 fe:01 123 /usr/lib/libchdb.so',
    'Rss:                  32 kB',
    'Anonymous:             0 kB',
    '7f0000300000-7f0000400000 rw-p 00000000 00:00 0 ',
    'Rss:                1024 kB',
    'Anonymous:          1024 kB',
    '7f0000400000-7f0000500000 r--p 00000000 fe:01 124 /usr/bin/node',
    'Rss:                   0 kB',
    'Anonymous:             0 kB',
  ].join('\n');

  it('reads each mapping with its resident and anonymous KiB', () => {
    const mappings = readMappings(smaps);
    expect(mappings).toHaveLength(5);
    expect(mappings[0]).toEqual({
      start: 0x7f0000000000n,
      end: 0x7f0000100000n,
      permissions: 'r-xp',
      path: '/usr/lib/libchdb.so',
      residentKiB: 512,
      anonymousKiB: 0,
    });
    expect(mappings[1]).toMatchObject({ residentKiB: 64, anonymousKiB: 16 });
  });

  it('releases only read-only file mappings with no page copied on write and something resident', () => {
    // Not the relocated read-only data (its pages differ from the file), the writable data, the heap, or an empty one.
    expect(
      readMappings(smaps)
        .filter(isCleanFileMapping)
        .map((mapping) => mapping.permissions),
    ).toEqual(['r-xp']);
  });
});

describe('the service after its start', () => {
  let service: ChildService;
  let dataDir: string;

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'runwatch-startup-pages-'));
    service = await startChildService(dataDir);
  });

  afterAll(async () => {
    await service?.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('releases the pages its start touched and goes on answering', async () => {
    const pid = service.child.pid!;
    const before = cleanFileMiB(pid);
    await untilLogged(service, RELEASED_LINE);
    const after = cleanFileMiB(pid);
    // Node's and (embedded) chdb's code touched at load: 60–250 MiB before, a few after.
    expect(before).toBeGreaterThan(40);
    expect(after).toBeLessThan(before / 2);

    const { key, projectId, token } = await createProjectKey(service.url);
    const batch = await fetch(`${service.url}/ingest/agent/runs/batch`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: batchBody(wholeRunItems(10, Date.now())),
    });
    expect(batch.status).toBe(200);
    const summary = await fetch(`${service.url}/projects/${projectId}/agent/summary`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(summary.status).toBe(200);
    expect(((await summary.json()) as { current: { total_runs: number } }).current.total_runs).toBe(10);
  });
});
