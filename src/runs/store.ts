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

const keyParams = (key: RunKey) => ({ project_id: key.projectId, id: key.id, timestamp: toClickHouseTime(key.timestamp) });

export function runStore(ch: ClickHouseStore) {
  const first = async <Row>(name: string, sql: string, params: Record<string, unknown>) =>
    (await ch.query<Row>({ name, sql, params }))[0];

  return {
    findFinished: (key: RunKey) => first<FinishedRunRow>('run.finished', q.SELECT_FINISHED_RUN, keyParams(key)),
    findLive: (key: RunKey) => first<LiveRunRow>('run.live', q.SELECT_LIVE_RUN, keyParams(key)),
    readSteps: (key: RunKey) => ch.query<StepRow>({ name: 'run.steps', sql: q.SELECT_STEPS, params: keyParams(key) }),

    /** The run in its latest state: its finished row if there is one, else its live row. */
    async findLatest(projectId: string, id: string, timestamp?: Date): Promise<FinishedRunRow | LiveRunRow | undefined> {
      if (timestamp) {
        const key = { projectId, id, timestamp };
        return (await this.findFinished(key)) ?? (await this.findLive(key));
      }
      const params = { project_id: projectId, id };
      return (
        (await first<FinishedRunRow>('run.finished_by_id', q.SELECT_FINISHED_RUN_BY_ID, params)) ??
        (await first<LiveRunRow>('run.live_by_id', q.SELECT_LIVE_RUN_BY_ID, params))
      );
    },

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
