// The retention capability, assembled: where each project's reads start, and the deletion of what is past it.
import type { Logger } from 'pino';
import type { Clock } from '../clock';
import type { ClickHouseStore } from '../db/clickhouse';
import type { PostgresStore } from '../db/postgres';
import { retentionCutoffs } from './cutoffs';
import { retentionJob } from './job';

export interface RetentionDependencies {
  pg: PostgresStore;
  ch: ClickHouseStore;
  clock: Clock;
  log: Logger;
}

export function createRetention({ pg, ch, clock, log }: RetentionDependencies) {
  const cutoffs = retentionCutoffs(pg, clock);
  return {
    /** Where a project's retained runs start: reports and alert signals read no earlier. */
    retainedFrom: cutoffs.retainedFrom,
    /** A project's retention changed here: its next read uses the new one. */
    retentionChanged: cutoffs.forget,
    /** Deletes runs past their project's retention; main.ts runs it hourly, tests call deletion.run(). */
    deletion: retentionJob({ pg, ch, clock, log: log.child({ component: 'retention' }) }),
  };
}
