// SQL of the scores (ClickHouse): a run's scores, the per-name report over a window and the one before it, and the
// score_mean signal. Values always travel as bound parameters; the only variable text is fixed fragments (filters).
// The report and the signal read `latest_scores` (schema/clickhouse/0006): the latest score of each (run, name,
// source), which FINAL resolves by merging sorted parts.
import { andEach, sql } from '../reports/sql';
import { columnList } from '../runs/tables';
import { SCORE_COLUMNS } from './tables';

/** A run's scores, each in its latest version, oldest first. FINAL here merges the few rows of one run. */
export const SELECT_RUN_SCORES = `
  SELECT ${columnList(SCORE_COLUMNS)}
  FROM scores FINAL
  WHERE project_id = {project_id:UUID} AND run_timestamp = {run_timestamp:DateTime64(3, 'UTC')}
    AND run_id = {run_id:UUID}
  ORDER BY created_at, version`;

/** Fixed filters over the scored runs, picked by name. */
export const SCORE_FILTERS = {
  name: 'name = {name:String}',
  agent_name: 'agent_name = {agent_name:String}',
  // A user's runs of the window, finished and running: a score does not carry its run's user (a finish may set it
  // after the score was recorded), so the runs are looked up, through the user index of `runs`.
  user_id: sql`
    run_id IN (
      SELECT id FROM runs
      WHERE project_id = {project_id:UUID} AND user_id = {user_id:String}
        AND timestamp >= {window_start:DateTime64(3, 'UTC')} AND timestamp < {window_end:DateTime64(3, 'UTC')}
      UNION ALL
      SELECT id FROM live_runs
      WHERE project_id = {project_id:UUID} AND user_id = {user_id:String}
        AND timestamp >= {window_start:DateTime64(3, 'UTC')} AND timestamp < {window_end:DateTime64(3, 'UTC')})`,
} as const;
export type ScoreFilter = keyof typeof SCORE_FILTERS;

/** The latest scores (per run, name and source) of the runs of [window_start, window_end) that match the filters. */
const latestScores = (filters: readonly ScoreFilter[]) => sql`
  SELECT name, data_type, value, label, run_id, run_timestamp
  FROM latest_scores FINAL
  WHERE project_id = {project_id:UUID}
    AND run_timestamp >= {window_start:DateTime64(3, 'UTC')}
    AND run_timestamp < {window_end:DateTime64(3, 'UTC')}${andEach(filters.map((filter) => SCORE_FILTERS[filter]))}`;

/**
 * Per name with scores in the current window, over both windows (told apart by current_start): counts, means (true
 * is 1), the exact median of numeric values (as the reports' percentiles: quantileExactInclusive) and each label's
 * count of categorical ones. A name's data type never changes, so any row's is the name's.
 */
export const selectScoreReport = (filters: readonly ScoreFilter[]) => sql`
  SELECT name, any(data_type) AS type,
    countIf(is_current) AS count,
    countIf(NOT is_current) AS prev_count,
    avgIf(value, is_current) AS mean,
    avgIf(value, NOT is_current) AS prev_mean,
    quantileExactInclusiveIf(0.5)(value, is_current) AS p50,
    sumMapIf([label], [toUInt64(1)], is_current AND data_type = 'categorical') AS labels
  FROM (
    SELECT *, run_timestamp >= {current_start:DateTime64(3, 'UTC')} AS is_current
    FROM (
      ${latestScores(filters)}
    )
  )
  GROUP BY name
  HAVING count > 0
  ORDER BY name`;

/**
 * score_mean of one name (the `name` filter is always among the filters) over the runs of the window that have it:
 * each run's value is the mean of its latest score from each source (true is 1), and the signal is the mean of
 * those; sample_count is how many runs have one. Categorical scores have no mean: they are not counted.
 */
export const selectScoreMean = (filters: readonly ScoreFilter[]) => sql`
  SELECT avg(run_value) AS value, count() AS sample_count
  FROM (
    SELECT run_id, avg(value) AS run_value
    FROM (
      ${latestScores(filters)}
    )
    WHERE data_type != 'categorical'
    GROUP BY run_id
  )`;
