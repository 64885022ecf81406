// The export of runs (contract §11): the runs of a window that match the run list's filters, in its order, each an
// Agent run, in CSV, JSON Lines or Parquet. ClickHouse writes the file in its own output format and the bytes go to
// the response as they come (db/clickhouse.ts `stream`): no row is assembled here, and the service's memory does not
// grow with the export.
import { fromClickHouseTime, toClickHouseTime, type ClickHouseStore, type QueryLimits } from '../db/clickhouse';
import type { RunQuery } from './durations';
import { pageHours, readHourCounts } from './run-list';
import { EITHER_TABLE_SELECT } from '../runs/tables';
import { hourWindowParams } from './rollups';
import { countedByRows, filterParams, runFilters, usedFilters, type RunFilterValues } from './run-filters';
import { sql } from './sql';
import { IN_WINDOW, LIVE_NOT_FINISHED, timeParam, type TimeRange } from './window-runs';

export const EXPORT_FORMATS = {
  csv: { format: 'CSVWithNames', mediaType: 'text/csv; charset=utf-8', extension: 'csv' },
  jsonl: { format: 'JSONEachRow', mediaType: 'application/jsonl; charset=utf-8', extension: 'jsonl' },
  parquet: { format: 'Parquet', mediaType: 'application/vnd.apache.parquet', extension: 'parquet' },
} as const;
export type ExportFormat = keyof typeof EXPORT_FORMATS;

/** RFC 3339 UTC with milliseconds, as the API writes times, from a DateTime64(3, 'UTC'). */
const rfc3339 = (column: string) => `concat(replaceOne(toString(${column}), ' ', 'T'), 'Z')`;
const RUNNING = "status = 'running'";

/**
 * An Agent run's fields (runs/model.ts `runSchema`, in its order) over a row read with EITHER_TABLE_SELECT: what a
 * running run has not got yet is null, as toRun (runs/tables.ts) makes it. CSV takes arrays as JSON text.
 */
const runFields = (arrays: 'native' | 'json') => {
  const array = (column: string, type: string) =>
    arrays === 'json' ? `toJSONString(${column})` : `CAST(${column}, 'Array(${type})')`;
  return [
    'toString(id) AS id',
    'toString(project_id) AS project_id',
    'toString(agent_name) AS agent_name',
    'toString(status) AS status',
    `${rfc3339('timestamp')} AS timestamp`,
    `if(${RUNNING}, NULL, ${rfc3339('finished_at')}) AS finished_at`,
    `if(${RUNNING}, NULL, duration_ms) AS duration_ms`,
    'input',
    'output',
    'loop_detected',
    'loop_step_index',
    `if(${RUNNING}, NULL, toString(termination_reason)) AS termination_reason`,
    `if(${RUNNING} OR termination_detail = '', NULL, termination_detail) AS termination_detail`,
    'total_steps',
    'total_tokens',
    'total_cost_usd',
    `${array('metadata', 'Float64')} AS metadata`,
    "nullIf(session_id, '') AS session_id",
    "nullIf(user_id, '') AS user_id",
    `${array('tags', 'String')} AS tags`,
  ].join(',\n');
};

/** A step's fields (runs/model.ts `stepOutSchema`, in its order): each one's expression over run_steps, and type. */
const STEP_FIELDS: [name: string, expression: string, type: string][] = [
  ['index', '`index`', 'UInt32'],
  ['type', 'toString(type)', 'String'],
  ['name', 'name', 'Nullable(String)'],
  ['tool_name', 'tool_name', 'Nullable(String)'],
  ['model', 'toString(model)', 'Nullable(String)'],
  ['input', 'input', 'String'],
  ['output', 'output', 'String'],
  ['tokens', 'tokens', 'Nullable(UInt64)'],
  ['input_tokens', 'input_tokens', 'Nullable(UInt64)'],
  ['output_tokens', 'output_tokens', 'Nullable(UInt64)'],
  ['cost_usd', 'cost_usd', 'Nullable(Float64)'],
  ['started_at', `if(started_at IS NULL, NULL, ${rfc3339('assumeNotNull(started_at)')})`, 'Nullable(String)'],
  ['duration_ms', 'duration_ms', 'Nullable(UInt64)'],
  ['error', 'error', 'Nullable(String)'],
];
/** A step as a named tuple: an object in JSON, a struct in Parquet. */
const STEP_TUPLE =
  `CAST((${STEP_FIELDS.map(([, expression]) => expression).join(', ')}), ` +
  `'Tuple(${STEP_FIELDS.map(([name, , type]) => `${name} ${type}`).join(', ')})')`;

/**
 * The steps of the window's runs, each run's in index order, joined to the exported runs by key. Steps of a window are
 * many: the join is a sort-merge join and the grouping spills, so neither holds them all in memory. A join does not
 * keep the runs' order: they are sorted again. (Without it, the fields are computed over the sorted runs in order.)
 */
const STEPS_OF_RUNS = sql`
  LEFT JOIN (
    SELECT run_timestamp, run_id, arraySort(step -> step.index, groupArray(${STEP_TUPLE})) AS steps
    FROM run_steps FINAL
    WHERE project_id = {project_id:UUID}
      AND run_timestamp >= ${timeParam('window_start')} AND run_timestamp < ${timeParam('window_end')}
    GROUP BY run_timestamp, run_id
  ) AS run_steps ON run_steps.run_timestamp = exported.timestamp AND run_steps.run_id = exported.id
  ORDER BY exported.timestamp DESC, UUIDToNum(exported.id) DESC`;

/**
 * A run's place in the export's order, newest first, then by id's text, descending: UUIDToNum's big-endian bytes
 * sort as the id's hexadecimal text does, in 16 bytes instead of 36.
 */
const EXPORT_ORDER = 'timestamp DESC, UUIDToNum(id) DESC';
const EXPORT_KEY = '(timestamp, UUIDToNum(id))';

/**
 * The export's statement: the window's runs that match, newest first (then by id's text, descending, as the list),
 * at most {limit}, as Agent runs; with their steps when asked. Sorting whole rows with a LIMIT would hold every row
 * kept in memory (a sort with a limit does not spill), so the sort runs twice: over the keys alone, for `last`, the
 * key of the {limit}-th run (the least of the first {limit}: the least of all when fewer match, and the zero key when
 * none does); then over the whole rows from `last` on, which are {limit} at most, without a limit, so it spills to
 * disk past its threshold (EXPORT_SETTINGS). The keys' sort itself holds what it is given, so it is given only the
 * newest hours that hold {limit} matching runs ({newest_hours_from}: newestHoursFrom, from the runs list's counts)
 * — the newest million of 100 M runs sorts about a million keys, not the window's hundred million (its memory at
 * 100 M runs, in-process: +543–587 → +150–153 MiB).
 */
export const selectExport = (filters: RunFilterValues, arrays: 'native' | 'json', withSteps: boolean) => {
  const used = usedFilters(filters);
  const matching = (columns: { runs: string; live_runs: string }, also = '') => sql`
    SELECT ${columns.runs}
    FROM runs
    WHERE ${IN_WINDOW}${runFilters(used, 'finished')}${also}
    UNION ALL
    SELECT ${columns.live_runs}
    FROM live_runs FINAL
    WHERE ${LIVE_NOT_FINISHED}${runFilters(used, 'live')}${also}`;
  return sql`
    WITH
      (SELECT min(${EXPORT_KEY}) FROM (
        SELECT timestamp, id FROM (${matching(
          { runs: 'timestamp, id', live_runs: 'timestamp, id' },
          `\n AND timestamp >= ${timeParam('newest_hours_from')}`,
        )})
        ORDER BY ${EXPORT_ORDER}
        LIMIT {limit:UInt64})) AS last,
      exported AS (
        SELECT * FROM (${matching(EITHER_TABLE_SELECT, `\n AND timestamp >= last.1 AND ${EXPORT_KEY} >= last`)})
        ORDER BY ${EXPORT_ORDER})
    SELECT
      ${runFields(arrays)}${withSteps ? ',\nrun_steps.steps AS steps' : ''}
    FROM exported
    ${withSteps ? STEPS_OF_RUNS : ''}`;
};

/**
 * Settings of an export's statement: sorts and joins spill to disk past 64 MiB, Parquet is written in row groups of
 * 10,000 runs, nulls are empty CSV fields, and 64-bit counts are JSON numbers. One thread reading blocks of 8,192
 * rows: each reading thread holds blocks of whole rows (inputs and outputs), which made most of an export's memory
 * (1 M runs as Parquet, in-process at 10 M runs: +440 MiB with the one sort and two threads, +170–190 MiB so; the
 * time, 2.4 → 4.5 s; BENCHMARKS.md).
 */
const EXPORT_SETTINGS = {
  max_bytes_before_external_sort: 64 * 1024 * 1024,
  max_bytes_before_external_group_by: 64 * 1024 * 1024,
  join_algorithm: 'full_sorting_merge',
  output_format_parquet_row_group_size: 10_000,
  max_threads: 1,
  max_block_size: 8192,
  format_csv_null_representation: '',
  output_format_json_quote_64bit_integers: 0,
  output_format_json_named_tuples_as_objects: 1,
};

export interface ExportRequest {
  format: ExportFormat;
  limit: number;
  includeSteps: boolean;
  filters: RunFilterValues;
}

// Runs the counts may hold that the export will not find: a run finishing between the finished and the running
// runs' counts (two statements) is counted twice, a duplicate row merged away after it was counted is gone. A few,
// never this many: the cut is taken for this many runs more than the limit.
const CUT_MARGIN = 1000;

/**
 * The start of the newest hours that hold the export's {limit} matching runs (and CUT_MARGIN more), by the runs
 * list's counts per hour; the window's start when fewer match, or when a filter is counted from rows (the counts
 * would read the window's rows once more, to save a sort of keys that reading them costs anyway). Runs stored after
 * the counts only add to those hours (a run stored meanwhile with an older start is one of fewer than {limit}, which
 * read the whole window).
 */
async function newestHoursFrom(
  query: RunQuery,
  projectId: string,
  window: TimeRange,
  request: ExportRequest,
  now: Date,
): Promise<Date> {
  if (countedByRows(usedFilters(request.filters))) return window.from;
  const { counts, total } = await readHourCounts(query, projectId, window, request.filters, now);
  const wanted = request.limit + CUT_MARGIN;
  const { hours } = pageHours(counts, { offset: 0, limit: wanted });
  return total < wanted || hours.length === 0 ? window.from : fromClickHouseTime(hours.at(-1)!);
}

/** The export's bytes, streamed from ClickHouse; rejects before any byte when the statement is refused. */
export async function streamExport(
  ch: ClickHouseStore,
  query: RunQuery,
  limits: QueryLimits,
  projectId: string,
  window: TimeRange,
  request: ExportRequest,
  now: Date,
) {
  const used = usedFilters(request.filters);
  const cut = await newestHoursFrom(query, projectId, window, request, now);
  return ch.stream({
    name: 'reports.export_runs',
    sql: selectExport(request.filters, request.format === 'csv' ? 'json' : 'native', request.includeSteps),
    params: {
      ...hourWindowParams(projectId, window, now, true),
      ...filterParams(request.filters, used),
      limit: request.limit,
      newest_hours_from: toClickHouseTime(cut),
    },
    format: EXPORT_FORMATS[request.format].format,
    limits,
    settings: EXPORT_SETTINGS,
  });
}
