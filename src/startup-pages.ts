// Loading the service touches code and read-only data all over its libraries once: libchdb.so's start-up alone leaves
// ~190 MiB of it resident (the kernel maps the 64 KiB around each page a fault touches), of which the service uses
// ~50 MiB again once it ingests and reports. Those pages are clean copies of files. Taking them out of the process's
// page tables loses nothing: they stay in the page cache, and a page used again comes back with a minor fault. The
// resident set is then what the service uses, not what its start touched (docs/foundation.md, "The process").
import fs from 'node:fs';
import type { Logger } from './logger';

/** madvise(2)'s "the range's pages are not needed now": a clean file page is refetched from the page cache. */
const MADV_DONTNEED = 4;

interface Mapping {
  start: bigint;
  end: bigint;
  permissions: string;
  path: string;
  residentKiB: number;
  anonymousKiB: number;
}

/** The mappings of /proc/<pid>/smaps, with the resident and the anonymous (copied on write) KiB of each. */
export function readMappings(smaps: string): Mapping[] {
  const mappings: Mapping[] = [];
  for (const line of smaps.split('\n')) {
    const header = /^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (header) {
      const [, start, end, permissions, path] = header;
      mappings.push({
        start: BigInt(`0x${start}`),
        end: BigInt(`0x${end}`),
        permissions,
        path,
        residentKiB: 0,
        anonymousKiB: 0,
      });
      continue;
    }
    const field = /^(Rss|Anonymous):\s+(\d+) kB/.exec(line);
    const mapping = mappings.at(-1);
    if (field && mapping) mapping[field[1] === 'Rss' ? 'residentKiB' : 'anonymousKiB'] = Number(field[2]);
  }
  return mappings;
}

/**
 * A mapping of a file that cannot be written and holds no page of its own: every resident page is the file's, so
 * dropping it changes nothing but where the next read of it faults. (A writable or copied-on-write mapping would lose
 * its changes: never these.)
 */
export const isCleanFileMapping = (mapping: Mapping) =>
  mapping.path.startsWith('/') &&
  !mapping.permissions.includes('w') &&
  mapping.anonymousKiB === 0 &&
  mapping.residentKiB > 0;

/** Drops this process's clean file pages from its resident set (Linux with glibc; elsewhere it does nothing). */
export async function releaseStartupPages(log: Logger): Promise<void> {
  if (process.platform !== 'linux') return;
  let madvise: (start: bigint, length: number, advice: number) => number;
  try {
    const { load } = await import('koffi');
    madvise = load('libc.so.6').func('int madvise(uint64_t start, size_t length, int advice)');
  } catch (error) {
    log.debug({ err: error }, 'memory: no glibc to release start-up pages with');
    return;
  }
  let releasedKiB = 0;
  for (const mapping of readMappings(fs.readFileSync('/proc/self/smaps', 'utf8')).filter(isCleanFileMapping)) {
    if (madvise(mapping.start, Number(mapping.end - mapping.start), MADV_DONTNEED) === 0) {
      releasedKiB += mapping.residentKiB;
    }
  }
  log.info({ releasedMiB: Math.round(releasedKiB / 1024) }, 'memory: pages touched only at start-up released');
}
