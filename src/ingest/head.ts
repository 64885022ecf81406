// The head: the latest state of every run with writes not yet in ClickHouse, and their steps, in memory. A steps
// or finish call finds here a run acknowledged a millisecond ago; once the flusher has stored a run's writes, the
// run leaves the head and is read from ClickHouse again. Rebuilt from the log at start-up.
import type { FinishedRunRow, LiveRunRow, StepRow } from '../runs/model';
import { isFinished, runIdentity as identity, type LatestRunRow, type RunKey } from '../runs/store';
import type { RunWrite } from './records';

interface HeadRun {
  latest: LatestRunRow | undefined;
  /** Steps by index, the newest version of each; made at the run's first step (most runs in the head have none). */
  steps: Map<number, StepRow> | undefined;
  /** The log sequence number of the last write to touch the run: it leaves once that write is flushed. */
  lsn: number;
}

/**
 * Which of two states of a run is the later: a finished row over any live row; among live rows the higher version.
 * A live row marked finished (a tombstone) is no state the head can answer with: the run's finished row is
 * elsewhere, so it is never kept as the latest.
 */
function later(current: LatestRunRow | undefined, incoming: LiveRunRow | FinishedRunRow): LatestRunRow | undefined {
  if (!current) return 'finished' in incoming && incoming.finished ? undefined : incoming;
  if (isFinished(current)) return current;
  if (isFinished(incoming)) return incoming;
  if (incoming.finished) return current;
  return Number(incoming.version) >= Number(current.version) ? incoming : current;
}

export class RunHead {
  private readonly runs = new Map<string, HeadRun>();

  private entry(projectId: string, clickHouseTime: string, id: string, lsn: number): HeadRun {
    const key = identity(projectId, clickHouseTime, id);
    let run = this.runs.get(key);
    if (!run) {
      run = { latest: undefined, steps: undefined, lsn };
      this.runs.set(key, run);
    }
    run.lsn = Math.max(run.lsn, lsn);
    return run;
  }

  /** Takes in an acknowledged write. */
  apply(write: RunWrite, lsn: number): void {
    for (const row of write.live) {
      const run = this.entry(row.project_id, row.timestamp, row.id, lsn);
      run.latest = later(run.latest, row);
    }
    for (const row of write.finished) {
      const run = this.entry(row.project_id, row.timestamp, row.id, lsn);
      run.latest = later(run.latest, row);
    }
    for (const step of write.steps) {
      const run = this.entry(step.project_id, step.run_timestamp, step.run_id, lsn);
      // Only a running run's steps are ever read back from here (to total the next steps call's).
      if (run.latest && isFinished(run.latest)) continue;
      run.steps ??= new Map();
      const current = run.steps.get(step.index);
      if (!current || Number(step.version) >= Number(current.version)) run.steps.set(step.index, step);
    }
  }

  /** The run's latest state, when the head holds it. */
  latest(key: RunKey, clickHouseTime: string): LatestRunRow | undefined {
    return this.runs.get(identity(key.projectId, clickHouseTime, key.id))?.latest;
  }

  /** The run's steps not yet in ClickHouse. */
  steps(key: RunKey, clickHouseTime: string): StepRow[] {
    return [...(this.runs.get(identity(key.projectId, clickHouseTime, key.id))?.steps?.values() ?? [])];
  }

  /** Runs whose every write is in ClickHouse leave the head. */
  forgetFlushed(flushedLsn: number): void {
    for (const [key, run] of this.runs) if (run.lsn <= flushedLsn) this.runs.delete(key);
  }

  get size(): number {
    return this.runs.size;
  }
}
