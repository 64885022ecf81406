// Stores lines of records in their tables: one insert; for rows that replace a run's earlier rows, then the
// deletion of those rows (by then the new row is in, so a reader may briefly see both, never neither).
import { TupleParam } from '@clickhouse/client';
import type { ClickHouseStore, InsertOptions } from '../db/clickhouse';
import { dropEmptiedParts } from '../db/emptied-parts';
import { deletionTarget } from '../db/topology';
import { runIdentity } from '../runs/store';
import { NO_SESSION, type SessionNumbers, type SessionOf } from '../sessions/numbers';
import { linesByTable, rowOf, RUN_TABLES, type RunTable } from './records';

/** The tables of run rows, whose lines get their session's number at the flush (`numberSessions`). */
const NUMBERED: ReadonlySet<RunTable> = new Set(['live_runs', 'runs', 'replaced']);
type LinesByTable = Map<RunTable, Map<string, string[]>>;

/** Where a run table's lines hold the project and the session. */
const sessionColumns = (table: RunTable) => ({
  project: RUN_TABLES[table].columns.indexOf('project_id'),
  session: RUN_TABLES[table].columns.indexOf('session_id'),
});

/**
 * Appends to each run row's line its session's number (schema/clickhouse/0011), numbering the sessions Postgres has
 * not seen. The number goes last, after the columns of the line's format, in every format the log has had; a line
 * stored again after a crash gets the same number, so its insert's deduplication token still names the same rows.
 */
async function numberSessions(tables: LinesByTable, numbers: SessionNumbers): Promise<void> {
  const sessions = new Map<string, SessionOf>();
  const runLines = [...NUMBERED].flatMap((table) => {
    const columns = sessionColumns(table);
    return [...(tables.get(table)?.values() ?? [])].map((lines) => {
      const keys = lines.map((line) => {
        const values = JSON.parse(line) as unknown[];
        const session = { projectId: values[columns.project] as string, sessionId: values[columns.session] as string };
        if (session.sessionId === '') return undefined;
        const key = `${session.projectId} ${session.sessionId}`;
        sessions.set(key, session);
        return key;
      });
      return { lines, keys };
    });
  });
  const numbered = sessions.size > 0 ? await numbers(sessions) : new Map<string, number>();
  for (const { lines, keys } of runLines)
    for (const [i, key] of keys.entries())
      lines[i] = `${lines[i].slice(0, -1)},${key === undefined ? NO_SESSION : numbered.get(key)}]`;
}

/**
 * Some records' lines as they are stored, by table and partition: each run row's line with its session's number, which
 * `insertLines` inserts with the line's other columns.
 */
export async function linesToStore(payloads: readonly Buffer[], numbers: SessionNumbers): Promise<LinesByTable> {
  const tables = linesByTable(payloads);
  await numberSessions(tables, numbers);
  return tables;
}

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
  await ch.insertLines(target, NUMBERED.has(table) ? [...columns, 'session_number'] : columns, lines, options);
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
