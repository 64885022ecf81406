// The `scores` table as stored (schema/clickhouse/0006): its row type and column list, once, and the mapping of a
// row to the API's Score. Ingest writes these rows through its log (ingest/records.ts), so the column list is also
// the log's line format for scores: a change to it takes a new tag there.
import { fromClickHouseTime } from '../db/clickhouse';
import type { Score, ScoreDataType, ScoreSource } from './model';

/** A row of `scores`: one version of a score; the highest version of an id is the score. */
export interface ScoreRow {
  run_timestamp: string;
  project_id: string;
  run_id: string;
  id: string;
  version: number;
  /** The run's agent, which never changes: reads of one agent's scores need no run. */
  agent_name: string;
  name: string;
  source: ScoreSource;
  data_type: ScoreDataType;
  /** numeric: the number; boolean: 1 or 0; categorical: 0. */
  value: number;
  /** categorical: the value; else ''. */
  label: string;
  /** '' when there is none. */
  comment: string;
  created_at: string;
  /** 1 when the score replaces an earlier one of its (run, name, source), whose value and label follow; else 0. */
  replaces: 0 | 1;
  replaced_value: number;
  replaced_label: string;
  /**
   * The run's value for the name (the mean of its latest numeric or boolean score from each source) before this
   * score, when it had one (run_had_value 1), and after it (schema/clickhouse/0009). 0 for categorical scores.
   */
  run_had_value: 0 | 1;
  run_value_before: number;
  run_value_after: number;
}

/** The columns that say what a score replaces and changes (schema/clickhouse/0008, 0009): older log lines lack them. */
export const REPLACEMENT_COLUMNS = [
  'replaces',
  'replaced_value',
  'replaced_label',
  'run_had_value',
  'run_value_before',
  'run_value_after',
] as const;
/**
 * A score that replaces none, on a run that had no value for its name: what the rollups count once (and an older log
 * line's score reads as). The run's value after it is the score's own (a number, or 1/0), set with the score.
 */
export const REPLACES_NONE = {
  replaces: 0,
  replaced_value: 0,
  replaced_label: '',
  run_had_value: 0,
  run_value_before: 0,
} as const;

// It starts with the run's start time, the table's partition key: the ingest log's flusher reads a line's partition
// off its first characters.
export const SCORE_COLUMNS = [
  'run_timestamp',
  'project_id',
  'run_id',
  'id',
  'version',
  'agent_name',
  'name',
  'source',
  'data_type',
  'value',
  'label',
  'comment',
  'created_at',
  ...REPLACEMENT_COLUMNS,
] as const satisfies readonly (keyof ScoreRow)[];

/** The pair of a run's scores of which the latest counts in reports (contract §10): its name and source. */
export const scorePair = (score: Pick<ScoreRow, 'name' | 'source'>) => `${score.name}\n${score.source}`;

/** A score's value as the API shows it: a number, true/false, or a label. */
function valueOf(row: Pick<ScoreRow, 'data_type' | 'value' | 'label'>): Score['value'] {
  if (row.data_type === 'categorical') return row.label;
  if (row.data_type === 'boolean') return Number(row.value) === 1;
  return Number(row.value);
}

export function toScore(row: ScoreRow): Score {
  return {
    id: row.id,
    run_id: row.run_id,
    name: row.name,
    data_type: row.data_type,
    value: valueOf(row),
    source: row.source,
    comment: row.comment === '' ? null : row.comment,
    created_at: fromClickHouseTime(row.created_at).toISOString(),
  };
}

/** What a score replaces of an earlier one of its pair: enough to find the pair, order it, and take it out. */
export type EarlierScore = Pick<
  ScoreRow,
  'run_timestamp' | 'run_id' | 'name' | 'source' | 'data_type' | 'value' | 'label' | 'version'
>;

const pairOfRun = (score: EarlierScore) => `${score.run_id}\n${score.run_timestamp}\n${scorePair(score)}`;

const mean = (values: Iterable<number>) => {
  const all = [...values];
  return all.reduce((sum, value) => sum + value, 0) / all.length;
};

/** A score row that adds nothing to the rollups: it replaces itself, and its run's value stays what it was. */
function countedAsNone(row: ScoreRow, runValues: ReadonlyMap<string, number>): ScoreRow {
  const itself = { ...row, replaces: 1 as const, replaced_value: row.value, replaced_label: row.label };
  if (row.data_type === 'categorical') return itself;
  const value = mean(runValues.values());
  return { ...itself, run_had_value: 1, run_value_before: value, run_value_after: value };
}

/**
 * Scores as written, each saying which earlier score of its pair it replaces, so that the rollups take that one out
 * (schema/clickhouse/0008), and its run's value for the name before and after it (0009): the latest of `earlier`
 * (those stored and those not yet flushed), or a score before it in `rows`.
 */
export function replacing(earlier: readonly EarlierScore[], rows: readonly ScoreRow[]): ScoreRow[] {
  const latest = new Map<string, EarlierScore>();
  for (const score of earlier) {
    const current = latest.get(pairOfRun(score));
    if (!current || Number(score.version) > Number(current.version)) latest.set(pairOfRun(score), score);
  }
  // Each run's latest numeric or boolean value of a name, by source.
  const runValues = new Map<string, Map<string, number>>();
  const valuesOf = (score: EarlierScore) => {
    const key = `${score.run_id}\n${score.run_timestamp}\n${score.name}`;
    let values = runValues.get(key);
    if (!values) runValues.set(key, (values = new Map()));
    return values;
  };
  for (const score of latest.values())
    if (score.data_type !== 'categorical') valuesOf(score).set(score.source, Number(score.value));
  return rows.map((row) => {
    const before = latest.get(pairOfRun(row));
    // A version older than its pair's latest (written under the lock after a newer one, or from an instance whose
    // clock is behind) is no pair's latest: it takes itself out again, and leaves its run's value as it is.
    if (before && Number(before.version) > Number(row.version)) return countedAsNone(row, valuesOf(row));
    latest.set(pairOfRun(row), row);
    const replaced = before
      ? { replaces: 1 as const, replaced_value: Number(before.value), replaced_label: before.label }
      : {};
    if (row.data_type === 'categorical') return { ...row, ...replaced };
    const values = valuesOf(row);
    const had = values.size > 0 ? { run_had_value: 1 as const, run_value_before: mean(values.values()) } : {};
    values.set(row.source, Number(row.value));
    return { ...row, ...replaced, ...had, run_value_after: mean(values.values()) };
  });
}
