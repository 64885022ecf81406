// SQL of the scores (ClickHouse): a run's scores, the per-name report over a window and the one before it, and the
// score_mean signal. Values always travel as bound parameters; the only variable text is fixed fragments (filters).
// They count the latest score of each (run, name, source): the report from rollups of those (schema/clickhouse/0008)
// and `latest_scores` at its windows' edges, the signal from `latest_scores` (0006), which FINAL resolves by merging
// sorted parts.
import {
  inWholeDays,
  inWholeHoursOutsideDays,
  inWindowHours,
  outsideWholeHours,
  outsideWindowHours,
} from '../reports/rollups';
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

/**
 * The latest score of each (name, source) of some runs, stored: what a new score of the pair replaces. The runs'
 * keys travel as two arrays; a row of a run not asked for (an id of one key with the time of another) is dropped by
 * the caller.
 */
export const SELECT_LATEST_OF_RUNS = `
  SELECT run_timestamp, run_id, name, source, data_type, value, label, version
  FROM latest_scores FINAL
  WHERE project_id = {project_id:UUID} AND run_timestamp IN {run_timestamps:Array(DateTime64(3, 'UTC'))}
    AND run_id IN {run_ids:Array(UUID)}`;

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

/** Fixed filters of the score rollups (schema/clickhouse/0008), which know the name and agent, not the user. */
const ROLLUP_FILTERS = { name: SCORE_FILTERS.name, agent_name: SCORE_FILTERS.agent_name } as const;
export type RollupFilter = keyof typeof ROLLUP_FILTERS;

/**
 * The latest scores of both windows as counts of each value (numeric, boolean as 1/0) or label (categorical) per
 * name, with the window they count in (is_current): whole days from the daily rollup, the other whole hours from the
 * hourly one, the partial hours at the windows' edges from `latest_scores`. Every range is empty but those a window
 * holds, so a short window reads its rows alone.
 */
const countedValues = (filters: readonly RollupFilter[]) => {
  const filtered = andEach(filters.map((filter) => ROLLUP_FILTERS[filter]));
  return sql`
    SELECT name, data_type, value, label, run_day >= {current_start:DateTime64(3, 'UTC')} AS is_current, scores
    FROM daily_score_rollups
    WHERE ${inWholeDays('run_day')}${filtered}
    UNION ALL
    SELECT name, data_type, value, label, run_hour >= {current_start:DateTime64(3, 'UTC')} AS is_current, scores
    FROM score_rollups
    WHERE ${inWholeHoursOutsideDays('run_hour')}${filtered}
    UNION ALL
    SELECT name, data_type, value, label, run_timestamp >= {current_start:DateTime64(3, 'UTC')} AS is_current,
           toInt64(1) AS scores
    FROM latest_scores FINAL
    WHERE project_id = {project_id:UUID}${filtered}
      AND run_timestamp >= {window_start:DateTime64(3, 'UTC')}
      AND run_timestamp < {window_end:DateTime64(3, 'UTC')}
      AND ${outsideWholeHours('run_timestamp')}`;
};

/**
 * Per name with scores in the current window, over both windows: counts, means (true is 1), the exact median of
 * numeric values and each label's count of categorical ones. The median is the reports' percentile (linear
 * interpolation between the values at ranks floor and ceil of (n − 1) / 2, as quantileExactInclusive), found in the
 * values sorted with their counts: the first value whose running count passes a rank is the value at that rank. A
 * name's data type never changes, so any row's is the name's.
 */
export const selectScoreReport = (filters: readonly RollupFilter[]) => sql`
  SELECT name, type, count, prev_count, mean, prev_mean, below + (middle - floor(middle)) * (above - below) AS p50,
    labels
  FROM (
    SELECT name, any(data_type) AS type,
      sumIf(weight, is_current) AS count,
      sumIf(weight, NOT is_current) AS prev_count,
      sumIf(value * weight, is_current) / count AS mean,
      sumIf(value * weight, NOT is_current) / prev_count AS prev_mean,
      arraySort(groupArrayIf((value, weight), is_current AND data_type = 'numeric')) AS distribution,
      arrayCumSum(arrayMap(counted -> counted.2, distribution)) AS running_counts,
      (count - 1) / 2 AS middle,
      distribution[arrayFirstIndex(running -> running > floor(middle), running_counts)].1 AS below,
      distribution[arrayFirstIndex(running -> running > ceil(middle), running_counts)].1 AS above,
      sumMapIf([label], [weight], is_current AND data_type = 'categorical') AS labels
    FROM (
      SELECT name, data_type, value, label, is_current, sum(scores) AS weight
      FROM (
        ${countedValues(filters)}
      )
      GROUP BY name, data_type, value, label, is_current
      HAVING weight != 0
    )
    GROUP BY name
    HAVING count > 0
  )
  ORDER BY name`;

/**
 * score_mean of one name (the `name` filter is always among the filters), optionally of one agent: the whole hours of
 * the window from the rollup of runs' values (schema/clickhouse/0009: per hour, the runs that have the score and the
 * sum of their values), the partial hours at its edges from `latest_scores`, each run's value the mean of its latest
 * score from each source (true is 1); sample_count is how many runs have one. Categorical scores have no mean.
 */
export const selectScoreMeanFromRollups = (filters: readonly RollupFilter[]) => {
  const filtered = andEach(filters.map((filter) => ROLLUP_FILTERS[filter]));
  return sql`
    SELECT sum(run_values) / sum(runs) AS value, sum(runs) AS sample_count
    FROM (
      SELECT runs, run_values
      FROM score_run_values
      WHERE project_id = {project_id:UUID}${filtered}
        AND ${inWindowHours('run_hour')}
      UNION ALL
      SELECT toInt64(1) AS runs, avg(value) AS run_values
      FROM latest_scores FINAL
      WHERE project_id = {project_id:UUID}${filtered}
        AND run_timestamp >= {window_start:DateTime64(3, 'UTC')} AND run_timestamp < {window_end:DateTime64(3, 'UTC')}
        AND ${outsideWindowHours('run_timestamp')}
        AND data_type != 'categorical'
      GROUP BY run_timestamp, run_id
    )`;
};

/**
 * score_mean of one name over one user's runs of the window (the rollup has no user), from `latest_scores`: each run's
 * value is the mean of its latest score from each source (true is 1), and the signal is the mean of those;
 * sample_count is how many runs have one. Categorical scores have no mean: they are not counted.
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
