// A dashboard read's scope. The read lane's requests run in it (src/app.ts), and what they ask of ClickHouse is asked
// as a read: its statements run at a lower OS priority than ingest's (the engine's `os_thread_priority`), so that
// reads beside heavy ingest take the CPU ingest leaves rather than half of it; and each statement, like the wait for
// the read's writes to be flushed, takes at most what is left of the read's time, so that an answer (200, or 503 with
// Retry-After) comes within READ_TIMEOUT_MS of the request, however busy the machine (docs/limits.md). Node's
// AsyncLocalStorage carries the scope through the awaits of a request without a parameter in every report's code.
import { AsyncLocalStorage } from 'node:async_hooks';

interface ReadScope {
  /** When the read must be answered by, in epoch milliseconds. */
  deadlineMs: number;
  /** The nice value (0 to 19) of the engine's threads while they run the read's statements. */
  nice: number;
  /** What the read's statements share (onceInRead). */
  shared: Map<string, unknown>;
}

const scope = new AsyncLocalStorage<ReadScope>();

/** Runs a read that must be answered by `deadlineMs`, its statements at `nice`. */
export const asRead = <T>(deadlineMs: number, nice: number, work: () => Promise<T>): Promise<T> =>
  scope.run({ deadlineMs, nice, shared: new Map() }, work);

/**
 * Runs work that no read owns outside any read's scope: work a read may start but others share, such as a flush of
 * the ingest log that the read waits for. Started within the read, its statements would run as the read's (at the
 * read's nice value; on the embedded engine also in the reads' queue of connections, stopped once the read's time is
 * up), and every writer and reader waiting for the same flush would wait on it.
 */
export const outsideRead = <T>(work: () => T): T => scope.exit(work);

/** Milliseconds left to the read under way; Infinity outside a read (ingest, background jobs). */
export function readTimeLeftMs(): number {
  const read = scope.getStore();
  return read ? read.deadlineMs - Date.now() : Infinity;
}

/**
 * Aborts the wait for a statement of the read under way once the read's time is up; undefined outside a read. The
 * statement's own time limit may not stop it then: a statement of the embedded engine may wait for one of its
 * connections (src/db/chdb-pool.ts), and that wait is not counted by that limit. Aborted, it is no longer waited for
 * (it leaves the connections' queue; one already running goes on, within its limit, in the background).
 */
export function readAbortSignal(): AbortSignal | undefined {
  const leftMs = readTimeLeftMs();
  return leftMs === Infinity ? undefined : AbortSignal.timeout(Math.max(1, leftMs));
}

/** The nice value of the read under way; 0 (the process's own priority) outside a read. */
export const readNice = (): number => scope.getStore()?.nice ?? 0;

/**
 * The value `make` gives, made once per read under way and shared by its statements (a look at the store they all
 * rely on); made each time outside a read.
 */
export function onceInRead<T>(key: string, make: () => T): T {
  const shared = scope.getStore()?.shared;
  if (!shared) return make();
  if (!shared.has(key)) shared.set(key, make());
  return shared.get(key) as T;
}
