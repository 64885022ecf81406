// The pages of files that only the start touched leave the service's resident set a few seconds after it listens
// (src/startup-pages.ts), and the service goes on working: a page used again comes back from the page cache.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { isCleanCodeMapping, readMappings } from '../../src/startup-pages';
import { startChildService, type ChildService } from '../support/child-service';
import { createProjectKey } from '../../bench/lib/service-process';
import { batchBody, wholeRunItems } from '../../bench/lib/whole-runs';

const RELEASED_LINE = 'pages touched only at start-up released';

const EXECUTABLE = fs.realpathSync(process.execPath);

/** MiB resident in the process's mappings of code that hold no page of their own (the child runs this node). */
const cleanCodeMiB = (pid: number) =>
  readMappings(fs.readFileSync(`/proc/${pid}/smaps`, 'utf8'))
    .filter((mapping) => isCleanCodeMapping(mapping, EXECUTABLE))
    .reduce((sum, mapping) => sum + mapping.residentKiB / 1024, 0);

async function untilLogged(service: ChildService, line: string, timeoutMs = 20_000) {
  for (const deadline = Date.now() + timeoutMs; !service.outputTail().includes(line);) {
    if (Date.now() > deadline) throw new Error(`"${line}" not logged:\n${service.outputTail()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('readMappings and isCleanCodeMapping', () => {
  const smaps = [
    '7f0000000000-7f0000100000 r-xp 00000000 fe:01 123 /usr/lib/libchdb.so',
    'Rss:                 512 kB',
    'Anonymous:             0 kB',
    'Swap:                  0 kB',
    // Relocated read-only data: pages of its own, resident or swapped out.
    '7f0000100000-7f0000200000 r--p 00100000 fe:01 123 /usr/lib/libchdb.so',
    'Rss:                  64 kB',
    'Anonymous:            16 kB',
    'Swap:                  0 kB',
    '7f0000200000-7f0000300000 r--p 00200000 fe:01 123 /usr/lib/libchdb.so',
    'Rss:                  64 kB',
    'Anonymous:             0 kB',
    'Swap:                 16 kB',
    '7f0000300000-7f0000400000 rw-p 00300000 fe:01 123 /usr/lib/libchdb.so',
    'Rss:                  32 kB',
    'Anonymous:             0 kB',
    '7f0000400000-7f0000500000 rw-p 00000000 00:00 0 ',
    'Rss:                1024 kB',
    'Anonymous:          1024 kB',
    '7f0000500000-7f0000600000 r-xp 00000000 fe:01 124 /usr/bin/node',
    'Rss:                   0 kB',
    'Anonymous:             0 kB',
    // A data file read through a mapping: it may be unmapped, and its range reused, at any time.
    '7f0000600000-7f0000700000 r--s 00000000 fe:01 125 /data/clickhouse/store/some file.bin',
    'Rss:                 128 kB',
    'Anonymous:             0 kB',
    '7f0000700000-7f0000800000 r-xp 00000000 fe:01 126 /opt/node/bin/node',
    'Rss:                 256 kB',
    'Anonymous:             0 kB',
    '7f0000800000-7f0000900000 r-xp 00000000 fe:01 127 /usr/lib/libc.so.6 (deleted)',
    'Rss:                  64 kB',
    'Anonymous:             0 kB',
  ].join('\n');

  it('reads each mapping with its resident KiB and those of its own pages', () => {
    const mappings = readMappings(smaps);
    expect(mappings).toHaveLength(9);
    expect(mappings[0]).toEqual({
      start: 0x7f0000000000n,
      end: 0x7f0000100000n,
      permissions: 'r-xp',
      path: '/usr/lib/libchdb.so',
      residentKiB: 512,
      ownKiB: 0,
    });
    expect(mappings[2]).toMatchObject({ residentKiB: 64, ownKiB: 16 });
    expect(mappings[6].path).toBe('/data/clickhouse/store/some file.bin');
  });

  it('releases only read-only code mappings with no page of their own and something resident', () => {
    const released = readMappings(smaps).filter((mapping) => isCleanCodeMapping(mapping, '/opt/node/bin/node'));
    expect(released.map((mapping) => mapping.path)).toEqual(['/usr/lib/libchdb.so', '/opt/node/bin/node']);
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
    const before = cleanCodeMiB(pid);
    await untilLogged(service, RELEASED_LINE);
    const after = cleanCodeMiB(pid);
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
