// Marks runs still running RUN_ABANDON_AFTER after their start as `abandoned`, by writing their finished row.
import type { Logger } from 'pino';
import { runEvery } from '../background';
import type { Clock } from '../clock';
import { toClickHouseTime, type ClickHouseStore } from '../db/clickhouse';
import type { Run } from '../runs/model';
import { columnList, LIVE_RUN_COLUMNS, type FinishedRunRow, type LiveRunRow } from '../runs/tables';
import { finishedRowOf } from './derive';

const BATCH = 10_000;
// Whole live rows, as `LiveRunRow`s: both passes below read them.
const LIVE_ROWS = `${columnList(LIVE_RUN_COLUMNS)}
  FROM live_runs FINAL`;

// Live rows past the cutoff whose run has no finished row yet; `runs` is read only as far back as live rows go.
const SELECT_STALE_LIVE_RUNS = `
  SELECT ${LIVE_ROWS}
  WHERE timestamp < {cutoff:DateTime64(3, 'UTC')}
    AND (project_id, timestamp, id) NOT IN (
      SELECT project_id, timestamp, id FROM runs
      WHERE timestamp >= (SELECT min(timestamp) FROM live_runs) AND timestamp < {cutoff:DateTime64(3, 'UTC')})
  LIMIT ${BATCH}`;

// Live rows of runs that have a finished row: the finish answers before it marks the live row, so a mark lost
// to a failed write or a stopped process leaves one behind. Reports count such a run once all the same (they
// anti-join it); marking it again keeps live_runs as small as the set of running runs.
const SELECT_FINISHED_LIVE_RUNS = `
  SELECT ${LIVE_ROWS}
  WHERE (project_id, timestamp, id) IN (
    SELECT project_id, timestamp, id FROM runs
    WHERE (project_id, timestamp, id) IN (SELECT project_id, timestamp, id FROM live_runs FINAL))
  LIMIT ${BATCH}`;

/**
 * Reads one pass's work: the finished rows of the runs to mark abandoned, and the live rows to retire: theirs, and
 * those of runs that finished without their live row being marked. The caller writes them.
 */
export async function abandonStaleRuns(
  ch: ClickHouseStore,
  clock: Clock,
  abandonAfterSeconds: number,
): Promise<{ finished: FinishedRunRow[]; live: LiveRunRow[] }> {
  const now = clock.now();
  const cutoff = new Date(now.getTime() - abandonAfterSeconds * 1000);
  const stale = await ch.query<LiveRunRow>({
    name: 'abandon.stale',
    sql: SELECT_STALE_LIVE_RUNS,
    params: { cutoff: toClickHouseTime(cutoff) },
  });
  // The mark comes after the cutoff, so the duration is at least RUN_ABANDON_AFTER.
  const finished = stale.map((live) => finishedRowOf(live, live, { status: 'abandoned' }, now));
  const unmarked = await ch.query<LiveRunRow>({ name: 'abandon.finished_live', sql: SELECT_FINISHED_LIVE_RUNS });
  return { finished, live: [...stale, ...unmarked] };
}

/** Runs a pass now and then every interval (undefined: another instance held the pass); returns the stop. */
export function startAbandonJob(options: {
  pass: () => Promise<Run[] | undefined>;
  log: Logger;
  intervalSeconds: number;
}): () => Promise<void> {
  const pass = async () => {
    const runs = await options.pass();
    if (runs && runs.length > 0) options.log.info({ count: runs.length }, 'runs marked abandoned');
  };
  return runEvery(options.intervalSeconds * 1000, pass, (error) =>
    options.log.warn({ err: error }, 'abandon pass failed; retrying next interval'),
  );
}
