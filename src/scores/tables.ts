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
}

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
] as const satisfies readonly (keyof ScoreRow)[];

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
