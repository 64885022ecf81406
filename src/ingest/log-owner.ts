// One ingest log, one instance: the log directory holds an OWNER file naming the host and process that write it.
// Two instances sharing a directory would replay, flush and delete each other's segments; the second one to start
// is refused with a clear error instead. On the same host the owner's process is asked whether it still lives; an
// owner on another host (a shared volume) keeps its file's time fresh, and counts as gone once that time is stale.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const OWNER_FILE = 'OWNER';
const REFRESH_MS = 5_000;
/** An owner on another host whose file was not refreshed for this long is taken to be gone. */
export const OWNER_STALE_MS = 3 * REFRESH_MS;

interface Owner {
  host: string;
  pid: number;
}

// Directories this process owns, each refreshed by one timer (a process that opens its log again keeps it).
const refreshing = new Map<string, NodeJS.Timeout>();

function processLives(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it lives, under another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function readOwner(file: string): (Owner & { refreshedAt: number }) | undefined {
  try {
    const owner = JSON.parse(fs.readFileSync(file, 'utf8')) as Owner;
    return { ...owner, refreshedAt: fs.statSync(file).mtimeMs };
  } catch {
    // None yet, or unreadable: a write cut short by a crash; no one can be writing the log under it.
    return undefined;
  }
}

/** Why another instance still owns the log, or undefined when it is this process's to take. */
function heldBy(owner: (Owner & { refreshedAt: number }) | undefined): string | undefined {
  if (!owner) return undefined;
  const self = owner.host === os.hostname();
  if (self && (owner.pid === process.pid || !processLives(owner.pid))) return undefined;
  if (!self && Date.now() - owner.refreshedAt > OWNER_STALE_MS) return undefined;
  return `process ${owner.pid} on ${owner.host}`;
}

/**
 * Makes this process the owner of the log in `directory`, or throws when another live instance owns it (each
 * instance needs its own INGEST_LOG_DIR).
 */
export function claimLogDirectory(directory: string): void {
  const file = path.join(directory, OWNER_FILE);
  const owner = readOwner(file);
  const holder = heldBy(owner);
  if (holder) {
    throw new Error(
      `the ingest log ${directory} belongs to another instance (${holder}): give each instance its own ` +
        `INGEST_LOG_DIR (an owner on another host counts as gone ${OWNER_STALE_MS / 1000} s after it stops)`,
    );
  }
  const me = JSON.stringify({ host: os.hostname(), pid: process.pid } satisfies Owner);
  if (!owner && !fs.existsSync(file)) {
    // Created only if still absent: of two instances starting together, the second finds the first's file.
    try {
      fs.writeFileSync(file, me, { flag: 'wx' });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      return claimLogDirectory(directory);
    }
  } else {
    // Taken over from a gone owner: written aside and renamed, so that a reader never sees half a file.
    const written = `${file}.${process.pid}`;
    fs.writeFileSync(written, me);
    fs.renameSync(written, file);
  }
  if (refreshing.has(directory)) return;
  const timer = setInterval(() => {
    const now = new Date();
    fs.utimes(file, now, now, () => undefined);
  }, REFRESH_MS);
  timer.unref();
  refreshing.set(directory, timer);
}
