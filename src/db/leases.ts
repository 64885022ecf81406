// Leases in Postgres for the jobs that run once per deployment: one row per job, held by one instance until it
// expires. Postgres' clock decides expiry, so instances whose clocks disagree still agree on who holds a lease.
import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import type { PostgresStore } from './postgres';

// Taken when free, expired, or already ours (a renewal); the row comes back only when this holder has it.
const TAKE_LEASE = `
  INSERT INTO job_leases (job, holder, expires_at)
  VALUES ($1, $2, now() + $3 * interval '1 millisecond')
  ON CONFLICT (job) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
  WHERE job_leases.expires_at <= now() OR job_leases.holder = EXCLUDED.holder
  RETURNING job`;

/** This instance's name in job_leases: host and process, and a random part, since a container's pid repeats. */
export const instanceName = (): string => `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;

export interface Leases {
  /** Takes or renews `job`'s lease for `ms`; false when another instance holds it. */
  take(job: string, ms: number): Promise<boolean>;
}

/** The leases of the jobs of one `deployment` (their row is the job's name within it), taken as `holder`. */
export function leasesIn(pg: PostgresStore, deployment: string, holder: string = instanceName()): Leases {
  return {
    take: async (job, ms) => (await pg.query(TAKE_LEASE, [`${job} ${deployment}`, holder, ms])).length === 1,
  };
}
