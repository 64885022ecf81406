// Stores lines of records in their tables: one insert; for rows that replace a run's earlier rows, then the
// deletion of those rows (by then the new row is in, so a reader may briefly see both, never neither).
import { TupleParam } from '@clickhouse/client';
import type { ClickHouseStore, InsertOptions } from '../db/clickhouse';
import { dropEmptiedParts } from '../db/emptied-parts';
import { deletionTarget } from '../db/topology';
import { runIdentity } from '../runs/store';
import { rowOf, RUN_TABLES, type RunTable } from './records';

// The runs of the replacing rows lose every row that is not the newest of them: re-run after a crash, it deletes
// nothing more. A run gets its next replacing row only once this one is flushed (service.ts reads the run after a
// flush), so a replay never meets a newer row than its own.
const DELETE_REPLACED = (target: string) => `
  DELETE FROM ${target}
  WHERE (project_id, timestamp, id) IN {runs:Array(Tuple(UUID, DateTime64(3, 'UTC'), UUID))}
    AND (project_id, timestamp, id, version) NOT IN {newest:Array(Tuple(UUID, DateTime64(3, 'UTC'), UUID, UInt64))}`;

type NewestRow = { key: [projectId: string, timestamp: string, id: string]; version: number };

/** The newest version of each run among replacing lines. */
function newestVersions(lines: readonly string[]): NewestRow[] {
  const newest = new Map<string, NewestRow>();
  for (const line of lines) {
    const row = rowOf(RUN_TABLES.replaced.columns, line) as {
      project_id: string;
      timestamp: string;
      id: string;
      version: number;
    };
    const identity = runIdentity(row.project_id, row.timestamp, row.id);
    if ((newest.get(identity)?.version ?? -1) < row.version)
      newest.set(identity, { key: [row.project_id, row.timestamp, row.id], version: row.version });
  }
  return [...newest.values()];
}

// Runs a DELETE names at most: their keys travel as query parameters, in the URL of a ClickHouse server.
const DELETE_BATCH_RUNS = 200;

/** Inserts lines into their table. */
export async function insertLines(
  ch: ClickHouseStore,
  table: RunTable,
  lines: readonly string[],
  options?: InsertOptions,
): Promise<void> {
  const { table: target, columns } = RUN_TABLES[table];
  await ch.insertLines(target, columns, lines, options);
}

/**
 * Deletes the rows that replacing lines (stored already) replace, then the parts that held nothing else (a small
 * flush's part of one run is emptied whole). A failure is the store's, retried with the segment.
 */
export async function deleteReplaced(ch: ClickHouseStore, lines: readonly string[]): Promise<void> {
  const newest = newestVersions(lines);
  for (let i = 0; i < newest.length; i += DELETE_BATCH_RUNS) {
    const batch = newest.slice(i, i + DELETE_BATCH_RUNS);
    await ch.command(DELETE_REPLACED(deletionTarget(ch.layout, 'runs')), {
      runs: batch.map(({ key }) => new TupleParam(key)),
      newest: batch.map(({ key, version }) => new TupleParam([...key, version])),
    });
  }
  if (newest.length > 0) await dropEmptiedParts(ch, 'runs');
}

/** Stores lines: their insert, and for replacing lines the deletion of the rows they replace. */
export async function storeLines(
  ch: ClickHouseStore,
  table: RunTable,
  lines: readonly string[],
  options?: InsertOptions,
): Promise<void> {
  await insertLines(ch, table, lines, options);
  if (table === 'replaced') await deleteReplaced(ch, lines);
}

/**
 * The order in which a record's kinds of rows are stored: each group after the one before. A run's replacing row
 * goes after its first row (which it deletes); finished rows before the live rows' tombstones, so that a failure in
 * between never leaves a run marked finished in live_runs without its row in runs.
 */
export const STORE_ORDER: readonly (readonly RunTable[])[] = [
  ['run_steps', 'otlp_traces', 'runs', 'scores'],
  ['replaced', 'live_runs'],
];
