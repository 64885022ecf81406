// Deletes what is past retention (contract §3): the runs, steps, live rows and scores of each project whose run started
// before now − retention_days, and all of those of projects that no longer exist. Run hourly: within a day holds.
import type { Logger } from 'pino';
import { DAY_MS, type Clock } from '../clock';
import { fromClickHouseTime, toClickHouseTime, type ClickHouseStore } from '../db/clickhouse';
import { dropEmptiedParts } from '../db/emptied-parts';
import type { PostgresStore } from '../db/postgres';
import { deletionTarget } from '../db/topology';
import { retentionCutoff } from './cutoffs';

// Rows are deleted once they are this far past the cutoff: with a cutoff that moves every hour, a project that
// reports all day would otherwise be due a DELETE at every pass; reads leave them out meanwhile (cutoffs.ts).
const SLACK_MS = 12 * 3_600_000;

// Each table, by the column of its run's start time. The scores' tables lose whole UTC days only (the cutoff is
// taken back to its day's start): a rollup's hour or day holding a cutoff would otherwise go whole while its scores
// after the cutoff stay, and a window that later reads that day whole (retention raised) would miss them. Reads
// leave out what is past the cutoff meanwhile, as they do for every table (cutoffs.ts).
const TABLES = [
  { table: 'runs', start: 'timestamp', byDay: false },
  { table: 'run_steps', start: 'run_timestamp', byDay: false },
  { table: 'live_runs', start: 'timestamp', byDay: false },
  { table: 'scores', start: 'run_timestamp', byDay: true },
  { table: 'latest_scores', start: 'run_timestamp', byDay: true },
  { table: 'score_rollups', start: 'run_hour', byDay: true },
  { table: 'daily_score_rollups', start: 'run_day', byDay: true },
  { table: 'score_run_values', start: 'run_hour', byDay: true },
] as const;

const SELECT_RETENTIONS = 'SELECT id, retention_days FROM projects';
// The oldest start per project (it reads the table's two leading key columns).
const oldestPerProject = (table: string, start: string) =>
  `SELECT toString(project_id) AS project_id, toString(min(${start})) AS oldest FROM ${table} GROUP BY project_id`;
// One lightweight DELETE per table and pass, whatever the number of projects due: each is a mutation, which waits
// for a slot in the engine's merge pool and touches every part it matches. Rows are hidden at once and dropped from
// disk as parts merge. A project that no longer exists loses every row; the others, those before their own cutoff.
const DELETE_EXPIRED = (target: string, start: string) => `
  DELETE FROM ${target}
  WHERE project_id IN {gone:Array(UUID)}
     OR (project_id IN {trimmed:Array(UUID)}
         AND ${start} < arrayElement({cutoffs:Array(DateTime64(3, 'UTC'))},
                                     indexOf({trimmed:Array(UUID)}, project_id)))`;
// Projects per statement: their ids travel as query parameters, which a server bounds in size.
const PROJECTS_PER_DELETE = 1_000;

/** A cutoff taken back to the start of its UTC day, when the table loses whole days only. */
const dayStartIf = (byDay: boolean, cutoff: Date | undefined) =>
  byDay && cutoff ? new Date(Math.floor(cutoff.getTime() / DAY_MS) * DAY_MS) : cutoff;

export interface RetentionJobDependencies {
  pg: PostgresStore;
  ch: ClickHouseStore;
  clock: Clock;
  log: Logger;
}

export function retentionJob({ pg, ch, clock, log }: RetentionJobDependencies) {
  /** Each project's cutoff; none for a project that no longer exists (every row of it goes). */
  async function cutoffs(): Promise<(projectId: string) => Date | undefined> {
    const now = clock.now();
    const retentions = new Map(
      (await pg.query<{ id: string; retention_days: number }>(SELECT_RETENTIONS)).map((row) => [
        row.id,
        row.retention_days,
      ]),
    );
    return (projectId) => {
      const days = retentions.get(projectId);
      return days === undefined ? undefined : retentionCutoff(now, days);
    };
  }

  /**
   * One pass: the number of (table, project) pairs it deleted rows of. A failed deletion is logged; the pass goes on.
   */
  async function run(): Promise<number> {
    let deleted = 0;
    for (const { table, start, byDay } of TABLES) {
      const oldest = await ch.query<{ project_id: string; oldest: string }>({
        name: `retention.oldest_${table}`,
        sql: oldestPerProject(table, start),
      });
      // Read after the rows: a project always exists before its first row, so one created meanwhile is known here.
      const cutoffOf = await cutoffs();
      const due = oldest
        .map((row) => ({
          projectId: row.project_id,
          oldest: fromClickHouseTime(row.oldest),
          cutoff: dayStartIf(byDay, cutoffOf(row.project_id)),
        }))
        .filter(({ oldest, cutoff }) => !cutoff || oldest.getTime() < cutoff.getTime() - SLACK_MS);
      for (let at = 0; at < due.length; at += PROJECTS_PER_DELETE) {
        const chunk = due.slice(at, at + PROJECTS_PER_DELETE);
        if (await deleteExpired(table, start, chunk)) deleted += chunk.length;
      }
    }
    if (deleted > 0) log.info({ deleted }, 'retention: expired rows deleted');
    return deleted;
  }

  async function deleteExpired(table: string, start: string, due: { projectId: string; cutoff: Date | undefined }[]) {
    const trimmed = due.filter((project) => project.cutoff);
    try {
      await ch.command(DELETE_EXPIRED(deletionTarget(ch.layout, table), start), {
        gone: due.filter((project) => !project.cutoff).map((project) => project.projectId),
        trimmed: trimmed.map((project) => project.projectId),
        cutoffs: trimmed.map((project) => toClickHouseTime(project.cutoff!)),
      });
      // A deleted project's parts, an expired stretch's: emptied whole, they would keep `runs` from merging.
      if (table === 'runs') await dropEmptiedParts(ch, table);
      return true;
    } catch (error) {
      log.warn(
        { err: error, table, projects: due.length },
        'retention: deleting expired rows failed; the next pass retries',
      );
      return false;
    }
  }
  return { run };
}
