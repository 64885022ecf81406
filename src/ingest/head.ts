// The head: the latest state of every run with writes not yet in ClickHouse, and their steps, in memory. A steps
// or finish call finds here a run acknowledged a millisecond ago; once the flusher has stored a run's writes, the
// run leaves the head and is read from ClickHouse again. Rebuilt from the log at start-up.
import { isFinished, runIdentity as identity, type LatestRunRow, type RunKey } from '../runs/store';
import type { FinishedRunRow, LiveRunRow, StepRow, VersionedRunRow } from '../runs/tables';
import { scorePair, type ScoreRow } from '../scores/tables';
import type { RunWrite } from './records';

interface HeadRun {
  latest: LatestRunRow | undefined;
  /** Steps by index, the newest version of each; made at the run's first step (most runs in the head have none). */
  steps: Map<number, StepRow> | undefined;
  /** The latest score of each (name, source) pair written here, made at the run's first score. */
  scores: Map<string, ScoreRow> | undefined;
  /** The log sequence number of the last write to touch the run: it leaves once that write is flushed. */
  lsn: number;
}

/** A finished row's version: 0, but on a row that replaces an earlier one (an assembled run written again). */
const versionOf = (row: FinishedRunRow) => Number((row as Partial<VersionedRunRow>).version ?? 0);

/**
 * Which of two states of a run is the later: a finished row over any live row; among rows of one kind the higher
 * version. A live row marked finished (a tombstone) is no state the head can answer with: the run's finished row
 * is elsewhere, so it is never kept as the latest.
 */
function later(current: LatestRunRow | undefined, incoming: LiveRunRow | FinishedRunRow): LatestRunRow | undefined {
  if (!current) return 'finished' in incoming && incoming.finished ? undefined : incoming;
  if (isFinished(current)) return isFinished(incoming) && versionOf(incoming) > versionOf(current) ? incoming : current;
  if (isFinished(incoming)) return incoming;
  if (incoming.finished) return current;
  return Number(incoming.version) >= Number(current.version) ? incoming : current;
}

export class RunHead {
  private readonly runs = new Map<string, HeadRun>();

  /** The run of a key (runIdentity), made when the head has none; the write `lsn` touches it. */
  private entry(key: string, lsn: number): HeadRun {
    let run = this.runs.get(key);
    if (!run) {
      run = { latest: undefined, steps: undefined, scores: undefined, lsn };
      this.runs.set(key, run);
    }
    run.lsn = Math.max(run.lsn, lsn);
    return run;
  }

  /** Takes in an acknowledged write. */
  apply(write: RunWrite, lsn: number): void {
    for (const rows of [write.live, write.finished, write.replaced]) {
      for (const row of rows) {
        const run = this.entry(identity(row.project_id, row.timestamp, row.id), lsn);
        run.latest = later(run.latest, row);
      }
    }
    for (const step of write.steps) {
      // Only a running run's steps are ever read back from here (to total the next steps call's); a finished run's
      // are not kept (a run assembled from spans comes finished, with all its steps in the same write).
      const key = identity(step.project_id, step.run_timestamp, step.run_id);
      const known = this.runs.get(key);
      if (known?.latest && isFinished(known.latest)) continue;
      const run = this.entry(key, lsn);
      run.steps ??= new Map();
      const current = run.steps.get(step.index);
      if (!current || Number(step.version) >= Number(current.version)) run.steps.set(step.index, step);
    }
    for (const score of write.scores) {
      const run = this.entry(identity(score.project_id, score.run_timestamp, score.run_id), lsn);
      run.scores ??= new Map();
      const pair = scorePair(score);
      const current = run.scores.get(pair);
      if (!current || Number(score.version) >= Number(current.version)) run.scores.set(pair, score);
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

  /** The latest score of each pair of the run not yet in ClickHouse. */
  scores(key: RunKey, clickHouseTime: string): ScoreRow[] {
    return [...(this.runs.get(identity(key.projectId, clickHouseTime, key.id))?.scores?.values() ?? [])];
  }

  /** Runs whose every write is in ClickHouse leave the head. */
  forgetFlushed(flushedLsn: number): void {
    for (const [key, run] of this.runs) if (run.lsn <= flushedLsn) this.runs.delete(key);
  }

  get size(): number {
    return this.runs.size;
  }
}
