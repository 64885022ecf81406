// Reads one run in its latest state (finished row first, else its live row) and its steps.
import { TupleParam } from '@clickhouse/client';
import { toClickHouseTime } from '../db/clickhouse';
import type { ClickHouseStore } from '../db/clickhouse';
import * as q from './queries';
import { storedRun, type FinishedRunRow, type LiveRunRow, type RunningRunRow, type StepRow } from './tables';

export interface RunKey {
  projectId: string;
  id: string;
  timestamp: Date;
}

export type LatestRunRow = FinishedRunRow | LiveRunRow;

/**
 * Resolves once every ingest write this instance acknowledged for the project is in ClickHouse: every read of runs
 * waits on it first (read-your-writes). Ingest provides it; it triggers a flush, it does not sleep.
 */
export type FlushBarrier = (projectId: string) => Promise<void>;

export const isFinished = (row: LatestRunRow): row is FinishedRunRow => 'status' in row;

const keyParams = (key: RunKey) => ({
  project_id: key.projectId,
  id: key.id,
  timestamp: toClickHouseTime(key.timestamp),
});

/** A row of the latest-runs union: a run of either table (tables.ts), with its live row's version (0 if finished). */
type UnionRow = (FinishedRunRow | RunningRunRow) & { version: number };

/** The union's row as the kind it came from. */
function fromUnion({ version, ...row }: UnionRow): LatestRunRow {
  const stored = storedRun(row);
  return 'status' in stored ? stored : { ...stored, version, finished: 0 };
}

/** The identity of a run as text, the same whether built from a key or read from a row. */
export const runIdentity = (projectId: string, clickHouseTime: string, id: string) =>
  `${projectId}/${clickHouseTime}/${id}`;

/** The latest state among a run's rows: its finished row wins over its live one. */
function latestByRun(rows: UnionRow[]): Map<string, LatestRunRow> {
  const latest = new Map<string, UnionRow>();
  for (const row of rows) {
    const key = runIdentity(row.project_id, row.timestamp, row.id);
    if (!latest.has(key) || row.status !== 'running') latest.set(key, row);
  }
  return new Map([...latest].map(([key, row]) => [key, fromUnion(row)]));
}

export function runStore(ch: ClickHouseStore) {
  /** Each run in its latest state (or undefined), in the order asked, in one query. */
  async function findLatestMany(keys: readonly RunKey[]): Promise<(LatestRunRow | undefined)[]> {
    if (keys.length === 0) return [];
    const times = keys.map((key) => toClickHouseTime(key.timestamp));
    const rows = await ch.query<UnionRow>({
      name: 'runs.latest',
      sql: q.SELECT_LATEST_RUNS,
      params: { keys: keys.map((key, i) => new TupleParam([key.projectId, times[i], key.id])) },
    });
    const latest = latestByRun(rows);
    return keys.map((key, i) => latest.get(runIdentity(key.projectId, times[i], key.id)));
  }

  return {
    findLatestMany,

    /** The run in its latest state: its finished row if there is one, else its live row. */
    async findLatest(projectId: string, id: string, timestamp?: Date): Promise<LatestRunRow | undefined> {
      if (timestamp) return (await findLatestMany([{ projectId, id, timestamp }]))[0];
      const rows = await ch.query<UnionRow>({
        name: 'run.latest_by_id',
        sql: q.SELECT_LATEST_RUN_BY_ID,
        params: { project_id: projectId, id },
      });
      return [...latestByRun(rows).values()][0];
    },

    readSteps: (key: RunKey) => ch.query<StepRow>({ name: 'run.steps', sql: q.SELECT_STEPS, params: keyParams(key) }),
  };
}

export type RunStore = ReturnType<typeof runStore>;
