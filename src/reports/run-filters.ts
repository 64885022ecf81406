// The run list's filters (contract §5, §10, §11), shared by the list (run-list.ts) and the export (run-export.ts):
// each a fixed SQL fragment per table, its value a bound parameter of the filter's name.
import { andEach, sql } from './sql';
import { IN_WINDOW, timeParam } from './window-runs';

/**
 * The text of a run and of a step that `q` searches, lowered: its fields joined by a NUL, which no `q` holds, so that a
 * match never spans two fields. schema/clickhouse/0007 indexes these very expressions (3-gram bloom filters):
 * ClickHouse matches a condition to an index by its expression.
 */
const RUN_TEXT = "lowerUTF8(concat(input, '\\0', output, '\\0', termination_detail))";
const STEP_TEXT = "lowerUTF8(concat(input, '\\0', output, '\\0', ifNull(error, '')))";
/** A lowered text holding q, lowered. multiSearchAny, unlike LIKE, needs no escaping of `%` and `_` in q. */
const holdsQ = (text: string) => `multiSearchAny(${text}, [lowerUTF8({q:String})])`;

/**
 * The keys of the window's runs whose text, or one of whose steps' text, holds q. Each table is read through its
 * skip index, so a rare q reads the few granules that hold its 3-grams. Live rows hold a running run's input alone.
 * Steps are read without FINAL: a step re-sent with another text matches by its old text too until the rows merge.
 */
const Q_MATCHES = sql`
  SELECT timestamp, id FROM runs
  WHERE ${IN_WINDOW} AND ${holdsQ(RUN_TEXT)}
  UNION ALL
  SELECT timestamp, id FROM live_runs
  WHERE ${IN_WINDOW} AND ${holdsQ('lowerUTF8(input)')}
  UNION ALL
  SELECT run_timestamp, run_id FROM run_steps
  WHERE project_id = {project_id:UUID}
    AND run_timestamp >= ${timeParam('window_start')} AND run_timestamp < ${timeParam('window_end')}
    AND ${holdsQ(STEP_TEXT)}`;
const MATCHES_Q = sql`
  (timestamp, id) IN (
    ${Q_MATCHES})`;

/**
 * The same for a live row, a running run: its input holds q, or one of its steps' text does. Its steps are looked up
 * by the keys of the window's live rows (the running runs: few), through run_steps' primary key, instead of searched
 * over the whole window a second time (the finished side's Q_MATCHES searches them once).
 */
const LIVE_MATCHES_Q = sql`
  (${holdsQ('lowerUTF8(input)')}
    OR (timestamp, id) IN (
      SELECT run_timestamp, run_id FROM run_steps
      WHERE project_id = {project_id:UUID}
        AND (run_timestamp, run_id) IN (SELECT timestamp, id FROM live_runs WHERE ${IN_WINDOW})
        AND ${holdsQ(STEP_TEXT)}))`;

/** The same fragment on both tables. */
const both = (fragment: string) => ({ finished: fragment, live: fragment });

/**
 * The filters, one fixed fragment per table: live rows are all `running`, so a status filter other than `running`
 * folds the live side to a constant false (and `running` the finished side to nothing). A running run has no
 * duration yet: a duration bound leaves it out. Its cost is its steps' so far, as the list shows it.
 */
export const RUN_FILTERS = {
  agent_name: both('agent_name = {agent_name:String}'),
  status: { finished: 'status = {status:String}', live: "'running' = {status:String}" },
  loop_detected: both('loop_detected = {loop_detected:Bool}'),
  session_id: both('session_id = {session_id:String}'),
  user_id: both('user_id = {user_id:String}'),
  tag: both('hasAll(tags, {tag:Array(String)})'),
  model: both('has(models, {model:String})'),
  tool_name: both('has(tool_names, {tool_name:String})'),
  min_duration_ms: { finished: 'duration_ms >= {min_duration_ms:UInt64}', live: 'false' },
  max_duration_ms: { finished: 'duration_ms <= {max_duration_ms:UInt64}', live: 'false' },
  min_cost_usd: both('total_cost_usd >= {min_cost_usd:Float64}'),
  max_cost_usd: both('total_cost_usd <= {max_cost_usd:Float64}'),
  q: { finished: MATCHES_Q, live: LIVE_MATCHES_Q },
} as const;
export type RunFilter = keyof typeof RUN_FILTERS;
export type RunFilterValues = Partial<Record<RunFilter, string | number | boolean | readonly string[]>>;

/**
 * Filters `run_counts` has no key for (contract §10, §11): with one, every hour is counted from rows, where the skip
 * indexes (bloom filters of session_id, user_id, tags, models and tool names; 3-gram filters of the text) skip the
 * granules that cannot match.
 */
const KEYED_FILTERS: readonly RunFilter[] = ['agent_name', 'status', 'loop_detected'];

/** The filters given a value, in RUN_FILTERS' order. */
export const usedFilters = (filters: RunFilterValues) =>
  (Object.keys(RUN_FILTERS) as RunFilter[]).filter((filter) => filters[filter] !== undefined);

/** Whether the filters need every hour counted from rows. */
export const countedByRows = (used: readonly RunFilter[]) => used.some((filter) => !KEYED_FILTERS.includes(filter));

/** The filters' bound values, by their names. */
export const filterParams = (filters: RunFilterValues, used: readonly RunFilter[]) =>
  Object.fromEntries(used.map((filter) => [filter, filters[filter]]));

/** `AND fragment`, a line each, of the filters on one side. */
export const runFilters = (filters: readonly RunFilter[], side: 'finished' | 'live') =>
  andEach(filters.map((filter) => RUN_FILTERS[filter][side]));
