// Reads one run in its latest state (finished row first, else its live row) and its steps.
import { toClickHouseTime } from '../db/clickhouse';
import type { ClickHouseStore } from '../db/clickhouse';
import type { FinishedRunRow, LiveRunRow, StepRow } from './model';
import * as q from './queries';

export interface RunKey {
  projectId: string;
  id: string;
  timestamp: Date;
}

export type LatestRunRow = FinishedRunRow | LiveRunRow;

export const isFinished = (row: LatestRunRow): row is FinishedRunRow => 'status' in row;

const keyParams = (key: RunKey) => ({ project_id: key.projectId, id: key.id, timestamp: toClickHouseTime(key.timestamp) });

type UnionRow = FinishedRunRow & { finished: number; version: number };

/** The union's row as the kind it came from. */
function fromUnion({ finished, version, ...row }: UnionRow): LatestRunRow {
  if (finished) return row;
  const { status: _s, finished_at: _f, duration_ms: _d, output: _o, termination_reason: _r, termination_detail: _t, ...live } = row;
  return { ...live, version, finished: 0 };
}

export function runStore(ch: ClickHouseStore) {
  async function latest(name: string, sql: string, params: Record<string, unknown>) {
    const [row] = await ch.query<UnionRow>({ name, sql, params });
    return row ? fromUnion(row) : undefined;
  }

  return {
    /** The run in its latest state: its finished row if there is one, else its live row. */
    findLatest(projectId: string, id: string, timestamp?: Date): Promise<LatestRunRow | undefined> {
      return timestamp
        ? latest('run.latest', q.SELECT_LATEST_RUN, keyParams({ projectId, id, timestamp }))
        : latest('run.latest_by_id', q.SELECT_LATEST_RUN_BY_ID, { project_id: projectId, id });
    },

    readSteps: (key: RunKey) => ch.query<StepRow>({ name: 'run.steps', sql: q.SELECT_STEPS, params: keyParams(key) }),

    /** Which of these runs already have a finished row. */
    async finishedIds(projectId: string, runs: readonly { id: string; timestamp: Date }[]): Promise<Set<string>> {
      if (runs.length === 0) return new Set();
      const times = runs.map((run) => run.timestamp.getTime());
      const rows = await ch.query<{ id: string }>({
        name: 'run.finished_ids',
        sql: q.SELECT_FINISHED_IDS,
        params: {
          project_id: projectId,
          from: toClickHouseTime(new Date(Math.min(...times))),
          to: toClickHouseTime(new Date(Math.max(...times))),
          ids: runs.map((run) => run.id),
        },
      });
      return new Set(rows.map((row) => row.id));
    },
  };
}

export type RunStore = ReturnType<typeof runStore>;
