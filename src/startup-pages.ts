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
  /** The mapping's own pages (copied on write), resident (`Anonymous`) and swapped out (`Swap`). */
  ownKiB: number;
}

/** The mappings of /proc/<pid>/smaps, with the resident KiB of each and those of its own pages. */
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
        ownKiB: 0,
      });
      continue;
    }
    const field = /^(Rss|Anonymous|Swap):\s+(\d+) kB/.exec(line);
    const mapping = mappings.at(-1);
    if (!field || !mapping) continue;
    if (field[1] === 'Rss') mapping.residentKiB = Number(field[2]);
    else mapping.ownKiB += Number(field[2]);
  }
  return mappings;
}

/** A shared library, a native addon, or `executable`: mapped at load and for the life of the process. */
const isLoadedCode = (path: string, executable: string) => /\.(so(\.\d+)*|node)$/.test(path) || path === executable;

/**
 * A mapping of a library (or of the program) that cannot be written and holds no page of its own, resident or
 * swapped out: every page of it is the file's, so dropping it changes nothing but where the next read of it faults.
 * Only code that stays mapped: a mapping released while another thread unmaps it and maps something else there would
 * lose that. (A writable or copied-on-write mapping, such as relocated data, would lose its changes: never these.)
 */
export const isCleanCodeMapping = (mapping: Mapping, executable: string) =>
  isLoadedCode(mapping.path, executable) &&
  !mapping.permissions.includes('w') &&
  mapping.ownKiB === 0 &&
  mapping.residentKiB > 0;

/** Drops the clean pages of this process's code from its resident set (Linux with glibc; elsewhere it does nothing). */
export async function releaseStartupPages(log: Logger): Promise<void> {
  if (process.platform !== 'linux') return;
  let madvise: (start: bigint, length: number, advice: number) => number;
  try {
    const { load } = await import('koffi');
    // The address as a 64-bit integer: the platforms chdb is built for are 64-bit.
    madvise = load('libc.so.6').func('int madvise(uint64_t start, size_t length, int advice)');
  } catch (error) {
    log.debug({ err: error }, 'memory: no glibc to release start-up pages with');
    return;
  }
  let releasedKiB = 0;
  const executable = fs.realpathSync(process.execPath);
  const mappings = readMappings(fs.readFileSync('/proc/self/smaps', 'utf8'));
  for (const mapping of mappings.filter((candidate) => isCleanCodeMapping(candidate, executable))) {
    if (madvise(mapping.start, Number(mapping.end - mapping.start), MADV_DONTNEED) === 0) {
      releasedKiB += mapping.residentKiB;
    }
  }
  log.info({ releasedMiB: Math.round(releasedKiB / 1024) }, 'memory: pages touched only at start-up released');
}
