// The run tables as stored (schema/clickhouse): `runs`, `live_runs` and `run_steps`. Each table's row type and its
// column list are here, side by side and once; so are the SELECT lists that read a run from either table, and the
// mapping of rows to the API's Run and Step (model.ts). Every capability that reads or writes these tables (ingest,
// its log and abandon job, reports, OTLP) takes their columns from here.
//
// To add a column: add it to the table's row type and to the end of its column list below (the compiler checks that
// the two agree), then write a migration under schema/clickhouse. The compiler then points at what else needs a
// word: where rows are built (ingest/derive.ts), a placeholder if only finished runs have it (RUNNING_PLACEHOLDERS),
// and toRun/toStep with model.ts's schemas if the API shows it.
import { fromClickHouseTime } from '../db/clickhouse';
import type { Run, RunStatus, Step, TerminationReason } from './model';

/** Totals a run carries, derived from its steps (and loop detection) as they arrive. */
export interface RunTotals {
  loop_detected: boolean;
  loop_step_index: number | null;
  total_steps: number;
  total_tokens: number;
  total_cost_usd: number;
  tool_calls: number;
  tool_names: string[];
  /** The distinct models of the run's llm steps (contract §11's model filter). */
  models: string[];
}

/** What a run says of where it belongs (contract §10); '' is "none" (the API's null). */
export interface RunLabels {
  session_id: string;
  user_id: string;
  tags: string[];
}

/** A row of `live_runs`: a run that has started and not (yet) finished. */
export interface LiveRunRow extends RunTotals, RunLabels {
  project_id: string;
  timestamp: string;
  id: string;
  version: number;
  /** 1 on the last version of a run that has finished: `live_runs FINAL` then leaves the run out. */
  finished: 0 | 1;
  agent_name: string;
  input: string;
  metadata: number[];
}

/** The columns every run has, running or finished. */
export type RunColumns = Omit<LiveRunRow, 'version' | 'finished'>;

/** A row of `runs`: a finished run, written once. */
export interface FinishedRunRow extends RunColumns {
  status: Exclude<RunStatus, 'running'>;
  finished_at: string;
  duration_ms: number;
  output: string;
  termination_reason: TerminationReason;
  termination_detail: string;
}

/** A finished run's row that replaces the rows stored for it before: the highest version stays. */
export interface VersionedRunRow extends FinishedRunRow {
  version: number;
}

/** A row of `run_steps`. */
export interface StepRow {
  project_id: string;
  run_timestamp: string;
  run_id: string;
  index: number;
  version: number;
  type: Step['type'];
  name: string | null;
  tool_name: string | null;
  model: string | null;
  input: string;
  output: string;
  tokens: number | null;
  input_tokens: number | null;
  output_tokens: number | null;
  cost_usd: number | null;
  started_at: string | null;
  duration_ms: number | null;
  error: string | null;
}

/** A list that names every column of a row type: one that misses a column does not compile (`missing` names it). */
const everyColumnOf =
  <Row>() =>
  <const Columns extends readonly (keyof Row & string)[]>(
    columns: Columns &
      ([Exclude<keyof Row, Columns[number]>] extends [never]
        ? unknown
        : { missing: Exclude<keyof Row, Columns[number]> }),
  ): Columns =>
    columns;

/** The totals' columns, which both run tables carry in this order; `models`, added later, goes last (below). */
const RUN_TOTALS_COLUMNS = everyColumnOf<Omit<RunTotals, 'models'>>()([
  'loop_detected',
  'loop_step_index',
  'total_steps',
  'total_tokens',
  'total_cost_usd',
  'tool_calls',
  'tool_names',
]);

/** The labels' columns, which both run tables carry last. */
export const RUN_LABEL_COLUMNS = everyColumnOf<RunLabels>()(['session_id', 'user_id', 'tags']);

// Each list is the ingest log's line format (ingest/records.ts): lines are read back and inserted by position, so a
// list that changes takes a new tag there, and lines of the old list are read as that list (a column added goes at
// the end, and older lines lack it). Every list starts with the row's start time, the table's partition key: the
// flusher reads a line's partition off its first characters without parsing it.
export const LIVE_RUN_COLUMNS = everyColumnOf<LiveRunRow>()([
  'timestamp',
  'project_id',
  'id',
  'version',
  'finished',
  'agent_name',
  'input',
  'metadata',
  ...RUN_TOTALS_COLUMNS,
  ...RUN_LABEL_COLUMNS,
  'models',
]);
export const FINISHED_RUN_COLUMNS = everyColumnOf<FinishedRunRow>()([
  'timestamp',
  'project_id',
  'id',
  'agent_name',
  'status',
  'finished_at',
  'duration_ms',
  'input',
  'output',
  'termination_reason',
  'termination_detail',
  ...RUN_TOTALS_COLUMNS,
  'metadata',
  ...RUN_LABEL_COLUMNS,
  'models',
]);
export const REPLACING_RUN_COLUMNS = everyColumnOf<VersionedRunRow>()([...FINISHED_RUN_COLUMNS, 'version']);
export const STEP_COLUMNS = everyColumnOf<StepRow>()([
  'run_timestamp',
  'project_id',
  'run_id',
  'index',
  'version',
  'type',
  'name',
  'tool_name',
  'model',
  'input',
  'output',
  'tokens',
  'input_tokens',
  'output_tokens',
  'cost_usd',
  'started_at',
  'duration_ms',
  'error',
]);

/** Columns as a SELECT list; quoted, since some are keywords (`index`). */
export const columnList = (columns: readonly string[]): string => columns.map((column) => `\`${column}\``).join(', ');

type FinishedOnlyColumn = Exclude<keyof FinishedRunRow, keyof RunColumns>;

/**
 * What a running run reads as in the columns only finished runs have: values of their types, named so that a
 * statement reading running runs alone still gives rows of the same shape. `status` 'running' tells such a row apart.
 */
const RUNNING_PLACEHOLDERS: Record<FinishedOnlyColumn, string> = {
  status: "'running'",
  finished_at: "toDateTime64(0, 3, 'UTC')",
  duration_ms: 'toUInt64(0)',
  output: "''",
  termination_reason: "''",
  termination_detail: "''",
};

const RUN_COLUMNS = LIVE_RUN_COLUMNS.filter((column) => column !== 'version' && column !== 'finished');
const FINISHED_ONLY_COLUMNS = Object.keys(RUNNING_PLACEHOLDERS) as FinishedOnlyColumn[];

/**
 * SELECT lists that read a run of either table as one shape, for statements that read both in one UNION ALL: a
 * finished run's row of `runs`, or a running run's row of `live_runs` with the placeholders. storedRun maps it back.
 */
export const EITHER_TABLE_SELECT = {
  runs: columnList([...RUN_COLUMNS, ...FINISHED_ONLY_COLUMNS]),
  live_runs: [
    columnList(RUN_COLUMNS),
    ...FINISHED_ONLY_COLUMNS.map((column) => `${RUNNING_PLACEHOLDERS[column]} AS ${column}`),
  ].join(', '),
};

/** A row read with EITHER_TABLE_SELECT from `live_runs`: a running run, with the placeholders. */
export type RunningRunRow = Omit<FinishedRunRow, 'status'> & { status: 'running' };

/** A row read with EITHER_TABLE_SELECT as stored: a running run's without the placeholders. */
export function storedRun(row: FinishedRunRow | RunningRunRow): FinishedRunRow | RunColumns {
  if (row.status !== 'running') return row;
  const {
    status: _status,
    finished_at: _finishedAt,
    duration_ms: _duration,
    output: _output,
    termination_reason: _reason,
    termination_detail: _detail,
    ...running
  } = row;
  // A placeholder left out of the destructuring above (a new finished-only column) fails to compile here.
  const stored: RunColumns & Record<Exclude<keyof typeof running, keyof RunColumns>, never> = running;
  return stored;
}

const isoFrom = (clickHouseTime: string) => fromClickHouseTime(clickHouseTime).toISOString();

/** Either kind of row, as stored, to the API's run. */
export function toRun(row: RunColumns | FinishedRunRow): Run {
  const finished = 'status' in row ? row : undefined;
  return {
    id: row.id,
    project_id: row.project_id,
    agent_name: row.agent_name,
    status: finished?.status ?? 'running',
    timestamp: isoFrom(row.timestamp),
    finished_at: finished ? isoFrom(finished.finished_at) : null,
    duration_ms: finished ? Number(finished.duration_ms) : null,
    input: row.input,
    output: finished?.output ?? '',
    loop_detected: Boolean(row.loop_detected),
    loop_step_index: row.loop_step_index,
    termination_reason: finished?.termination_reason ?? null,
    termination_detail: finished ? finished.termination_detail || null : null,
    total_steps: Number(row.total_steps),
    total_tokens: Number(row.total_tokens),
    total_cost_usd: Number(row.total_cost_usd),
    metadata: row.metadata,
    session_id: row.session_id || null,
    user_id: row.user_id || null,
    tags: row.tags,
  };
}

const nullableNumber = (value: number | null | undefined) =>
  value === null || value === undefined ? null : Number(value);

/** A stored step to the API's step. */
export function toStep(row: StepRow): Step {
  return {
    index: row.index,
    type: row.type,
    name: row.name,
    tool_name: row.tool_name,
    model: row.model,
    input: row.input,
    output: row.output,
    tokens: nullableNumber(row.tokens),
    input_tokens: nullableNumber(row.input_tokens),
    output_tokens: nullableNumber(row.output_tokens),
    cost_usd: row.cost_usd,
    started_at: row.started_at === null ? null : isoFrom(row.started_at),
    duration_ms: nullableNumber(row.duration_ms),
    error: row.error,
  };
}
