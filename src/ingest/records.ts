// A write of the ingest path as one record of the log: the rows it adds to each run table, already encoded as the
// JSONCompactEachRow lines the flusher inserts, so that a row is serialised once, when it is acknowledged.
import { encodeRows } from '../db/clickhouse';
import {
  FINISHED_RUN_COLUMNS,
  LIVE_RUN_COLUMNS,
  REPLACING_RUN_COLUMNS,
  RUN_LABEL_COLUMNS,
  STEP_COLUMNS,
  type FinishedRunRow,
  type LiveRunRow,
  type RunLabels,
  type RunTotals,
  type StepRow,
  type VersionedRunRow,
} from '../runs/tables';
import { REPLACEMENT_COLUMNS, REPLACES_NONE, SCORE_COLUMNS, type ScoreRow } from '../scores/tables';

/** The spans of a trace being assembled (OTLP) that one export added, as `otlp_traces` keeps them. */
export interface TraceRow {
  received_at: string;
  project_id: string;
  trace_id: string;
  /** How many spans this row leaves waiting for their agent, less how many waiting ones it places. */
  open_spans: number;
  /** The spans as the trace's assembly reads them back (JSON). */
  spans: string;
}

/** The rows one ingest call adds: acknowledged, flushed and replayed whole. */
export interface RunWrite {
  projectId: string;
  live: LiveRunRow[];
  finished: FinishedRunRow[];
  /**
   * New rows of finished runs stored before (a span that arrived late): the older rows are deleted once these are in.
   */
  replaced: VersionedRunRow[];
  steps: StepRow[];
  traces: TraceRow[];
  /** Scores of runs (contract §10). */
  scores: ScoreRow[];
}

// Every column list starts with the row's start time, the table's partition key: the flusher reads a line's
// partition off its first characters (`["2026-11-23 10:…`) without parsing it. The run tables' lists are theirs
// (runs/tables.ts); their order is the lines' format.
const isLabelColumn = (column: string) => (RUN_LABEL_COLUMNS as readonly string[]).includes(column);

const TRACE_COLUMNS = [
  'received_at',
  'project_id',
  'trace_id',
  'open_spans',
  'spans',
] as const satisfies readonly (keyof TraceRow)[];

/** The kinds of rows a record holds; each is inserted into a table, `replaced` into `runs` (in place of older rows). */
export type RunTable = 'live_runs' | 'runs' | 'replaced' | 'run_steps' | 'otlp_traces' | 'scores';

/**
 * Each kind of row: its tag in a record (what a line starts with, before its JSON array), the table it goes to, its
 * columns, and its partition key's length in a line's time text. A kind whose columns change takes a new tag, and
 * the old one stays readable below (LINES_BEFORE).
 */
export const RUN_TABLES: Record<
  RunTable,
  { tag: string; table: string; columns: readonly string[]; partitionChars: number }
> = {
  // live_runs is partitioned by hour (`2026-11-23 10`), runs and run_steps by month (`2026-11`), otlp_traces by day.
  live_runs: { tag: 'L3', table: 'live_runs', columns: LIVE_RUN_COLUMNS, partitionChars: 13 },
  runs: { tag: 'F3', table: 'runs', columns: FINISHED_RUN_COLUMNS, partitionChars: 7 },
  replaced: { tag: 'R3', table: 'runs', columns: REPLACING_RUN_COLUMNS, partitionChars: 7 },
  run_steps: { tag: 'S', table: 'run_steps', columns: STEP_COLUMNS, partitionChars: 7 },
  otlp_traces: { tag: 'O', table: 'otlp_traces', columns: TRACE_COLUMNS, partitionChars: 10 },
  scores: { tag: 'C2', table: 'scores', columns: SCORE_COLUMNS, partitionChars: 7 },
};

const isModelsColumn = (column: string) => column === 'models';
/** An older line's kind, the columns it was written with, and what the columns it lacks take. */
interface OlderLine {
  table: RunTable;
  columns: readonly string[];
  lacking: (row: Record<string, unknown>) => object;
}
const RUN_NOT_SENT: RunLabels & Pick<RunTotals, 'models'> = { session_id: '', user_id: '', tags: [], models: [] };
/**
 * Lines of logs written by earlier versions, which a record may still hold after an upgrade: their kind and the
 * columns they were written with. Before runs had models (schema/clickhouse/0007, tags L2, F2, R2) the run rows' lines
 * lacked that column; before they had sessions, users and tags (0006, tags L, F, R) they lacked those too. Such a line
 * reads as a run without them. Before scores said what they replace and change (0008 and 0009, tag C), a score's line
 * reads as one that replaces none, on a run whose only score it is.
 */
const LINES_BEFORE: Record<string, OlderLine> = {
  ...Object.fromEntries(
    (['live_runs', 'runs', 'replaced'] as const).flatMap((table) => {
      const letter = table === 'live_runs' ? 'L' : table === 'runs' ? 'F' : 'R';
      const withLabels = RUN_TABLES[table].columns.filter((column) => !isModelsColumn(column));
      const lacking = () => RUN_NOT_SENT;
      return [
        [`${letter}2`, { table, columns: withLabels, lacking }],
        [letter, { table, columns: withLabels.filter((column) => !isLabelColumn(column)), lacking }],
      ];
    }),
  ),
  // A score written before scores said what they change counts as its run's only one: the run's value is its own.
  C: {
    table: 'scores',
    columns: SCORE_COLUMNS.filter((column) => !(REPLACEMENT_COLUMNS as readonly string[]).includes(column)),
    lacking: (row) => ({ ...REPLACES_NONE, run_value_after: row.value }),
  },
};

/** An older line in the current format of its kind: the columns it lacks take their "none". */
function upgradeLine(written: OlderLine, line: string): string {
  const row = rowOf(written.columns, line);
  return encodeRows([{ ...written.lacking(row), ...row }], RUN_TABLES[written.table].columns)[0];
}

const TABLE_OF_TAG = new Map(Object.entries(RUN_TABLES).map(([table, { tag }]) => [tag, table as RunTable]));

/** Appends a table's rows to a record's text: a newline, the table's tag and the row's line, for each. */
function appendLines(text: string, tag: string, rows: readonly object[], columns: readonly string[]): string {
  if (rows.length === 0) return text;
  let appended = text;
  for (const line of encodeRows(rows, columns)) appended += `\n${tag}${line}`;
  return appended;
}

/**
 * The record's text: the project id, then one line per row, its table's tag and its JSON array. JSON text never
 * holds a raw newline, so lines split on it.
 */
export function encodeWrite(write: RunWrite): Buffer {
  let text = appendLines(write.projectId, RUN_TABLES.live_runs.tag, write.live, LIVE_RUN_COLUMNS);
  text = appendLines(text, RUN_TABLES.runs.tag, write.finished, FINISHED_RUN_COLUMNS);
  text = appendLines(text, RUN_TABLES.replaced.tag, write.replaced, REPLACING_RUN_COLUMNS);
  text = appendLines(text, RUN_TABLES.run_steps.tag, write.steps, STEP_COLUMNS);
  text = appendLines(text, RUN_TABLES.otlp_traces.tag, write.traces, TRACE_COLUMNS);
  text = appendLines(text, RUN_TABLES.scores.tag, write.scores, SCORE_COLUMNS);
  return Buffer.from(text, 'utf8');
}

/** A tagged line's kind and its insert line (the JSON array), an older format's in the current one. */
function untag(tagged: string): { table: RunTable; line: string } {
  const start = tagged.indexOf('[');
  const tag = tagged.slice(0, start);
  const line = tagged.slice(start);
  const table = TABLE_OF_TAG.get(tag);
  if (table) return { table, line };
  const written = LINES_BEFORE[tag];
  if (!written) throw new Error(`ingest log: a line of unknown kind ${JSON.stringify(tag)}`);
  return { table: written.table, line: upgradeLine(written, line) };
}

/** A record's rows as insert lines, by table, without parsing them (but for lines of an older format). */
export function linesOf(payload: Buffer): { projectId: string; lines: { table: RunTable; line: string }[] } {
  const [projectId, ...tagged] = payload.toString('utf8').split('\n');
  return { projectId, lines: tagged.map(untag) };
}

/** The number of rows in a record: its lines after the project id. */
export function rowsInRecord(payload: Buffer): number {
  let rows = 0;
  for (let i = payload.indexOf(10); i !== -1; i = payload.indexOf(10, i + 1)) rows += 1;
  return rows;
}

/** The partition a line's row belongs to, read off the start time that opens it (`["2026-11-23 10:…`). */
export const partitionOf = (table: RunTable, line: string) => line.slice(2, 2 + RUN_TABLES[table].partitionChars);

/** The lines of some records by table, and within a table by partition. */
export function linesByTable(payloads: readonly Buffer[]): Map<RunTable, Map<string, string[]>> {
  const tables = new Map<RunTable, Map<string, string[]>>();
  for (const payload of payloads) {
    for (const { table, line } of linesOf(payload).lines) {
      let partitions = tables.get(table);
      if (!partitions) tables.set(table, (partitions = new Map()));
      const partition = partitionOf(table, line);
      const lines = partitions.get(partition);
      if (lines) lines.push(line);
      else partitions.set(partition, [line]);
    }
  }
  return tables;
}

export function rowOf(columns: readonly string[], line: string): Record<string, unknown> {
  const values = JSON.parse(line) as unknown[];
  return Object.fromEntries(columns.map((column, i) => [column, values[i]]));
}

/** A record back as the write it was: at start-up, to rebuild the runs not yet in ClickHouse. */
export function decodeWrite(payload: Buffer): RunWrite {
  const { projectId, lines } = linesOf(payload);
  const write: RunWrite = { projectId, live: [], finished: [], replaced: [], steps: [], traces: [], scores: [] };
  const rowsOf: Record<RunTable, object[]> = {
    live_runs: write.live,
    runs: write.finished,
    replaced: write.replaced,
    run_steps: write.steps,
    otlp_traces: write.traces,
    scores: write.scores,
  };
  for (const { table, line } of lines) rowsOf[table].push(rowOf(RUN_TABLES[table].columns, line));
  return write;
}
