// How far back a project's runs may be read (contract §3): runs that started before now − retention_days are never
// listed or counted, whether or not the deletion job has reached them yet.
import { DAY_MS, type Clock } from '../clock';
import type { PostgresStore } from '../db/postgres';

export const DEFAULT_RETENTION_DAYS = 400;
// A retention changed on another instance is seen within this long; on this one, at once (forget).
const CACHE_MS = 60_000;

const SELECT_RETENTION = 'SELECT retention_days FROM projects WHERE id = $1';

/** Where runs retained `days` start at `now`: anything that started before is past retention. */
export const retentionCutoff = (now: Date, days: number): Date => new Date(now.getTime() - days * DAY_MS);

/** Where a project's retained runs start, now: its reads begin no earlier. */
export type RetainedFrom = (projectId: string) => Promise<Date>;

export function retentionCutoffs(pg: PostgresStore, clock: Clock) {
  const cache = new Map<string, { days: Promise<number>; loadedAt: number }>();

  function daysOf(projectId: string): Promise<number> {
    const now = clock.now().getTime();
    const cached = cache.get(projectId);
    if (cached && now - cached.loadedAt < CACHE_MS) return cached.days;
    // A project that is gone gets the default: reads of it are refused before they get here anyway.
    const days = pg
      .query<{ retention_days: number }>(SELECT_RETENTION, [projectId])
      .then(([row]) => row?.retention_days ?? DEFAULT_RETENTION_DAYS);
    const entry = { days, loadedAt: now };
    // A failed read is not kept (unless a newer one has replaced it meanwhile): the next read asks again.
    days.catch(() => cache.get(projectId) === entry && cache.delete(projectId));
    cache.set(projectId, entry);
    return days;
  }

  return {
    retainedFrom: (async (projectId) => retentionCutoff(clock.now(), await daysOf(projectId))) as RetainedFrom,
    /** Reads a project's retention anew on its next read (it was just changed here). */
    forget: (projectId: string) => void cache.delete(projectId),
  };
}

export type RetentionCutoffs = ReturnType<typeof retentionCutoffs>;
