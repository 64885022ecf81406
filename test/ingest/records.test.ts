// The ingest log's record format across versions: a log written before runs had models (schema/clickhouse/0007, tags
// L2/F2/R2), or before they had sessions, users and tags (0006, tags L/F/R), reads back after an upgrade as runs
// without them; one written before scores said what they replace (0008, tag C), as scores that replace none.
import { encodeRows } from '../../src/db/clickhouse';
import { decodeWrite, encodeWrite, type RunWrite } from '../../src/ingest/records';
import { FINISHED_RUN_COLUMNS, LIVE_RUN_COLUMNS, type FinishedRunRow, type LiveRunRow } from '../../src/runs/tables';
import { REPLACEMENT_COLUMNS, SCORE_COLUMNS, type ScoreRow } from '../../src/scores/tables';

const PROJECT = '0190b3a5-6c4e-7d3f-8a1b-2c3d4e5f6a70';
const live: LiveRunRow = {
  project_id: PROJECT,
  timestamp: '2026-11-27 09:00:00.000',
  id: '0190b3a5-6c4e-7d3f-8a1b-2c3d4e5f6a71',
  version: 1,
  finished: 0,
  agent_name: 'planner',
  input: 'Book a table',
  metadata: [1],
  loop_detected: false,
  loop_step_index: null,
  total_steps: 2,
  total_tokens: 10,
  total_cost_usd: 0.5,
  tool_calls: 1,
  tool_names: ['search'],
  session_id: 's-1',
  user_id: 'alice',
  tags: ['prod'],
  models: ['gpt-4o'],
};
const finished: FinishedRunRow = {
  ...live,
  status: 'completed',
  finished_at: '2026-11-27 09:00:01.000',
  duration_ms: 1000,
  output: 'Booked',
  termination_reason: 'completed',
  termination_detail: '',
};
const { version: _version, finished: _finished, ...finishedColumns } = { ...live, ...finished };
const score: ScoreRow = {
  run_timestamp: live.timestamp,
  project_id: PROJECT,
  run_id: live.id,
  id: '0190b3a5-6c4e-7d3f-8a1b-2c3d4e5f6a72',
  version: 2,
  agent_name: 'planner',
  name: 'quality',
  source: 'eval',
  data_type: 'numeric',
  value: 0.8,
  label: '',
  comment: '',
  created_at: '2026-11-27 09:00:02.000',
  replaces: 1,
  replaced_value: 0.4,
  replaced_label: '',
  run_had_value: 1,
  run_value_before: 0.4,
  run_value_after: 0.8,
};
const empty: Omit<RunWrite, 'projectId'> = { live: [], finished: [], replaced: [], steps: [], traces: [], scores: [] };

/** A record as an earlier version wrote it: its lines tagged `tag`, without the columns it did not have. */
function olderRecord(tag: string, row: object, columns: readonly string[], without: readonly string[]): Buffer {
  const [line] = encodeRows(
    [row],
    columns.filter((column) => !without.includes(column)),
  );
  return Buffer.from(`${PROJECT}\n${tag}${line}`);
}

describe('ingest log records', () => {
  it('read back as written', () => {
    const write = {
      projectId: PROJECT,
      ...empty,
      live: [live],
      finished: [finishedColumns as FinishedRunRow],
      scores: [score],
    };
    expect(decodeWrite(encodeWrite(write))).toEqual(write);
  });

  it.each([
    ['L2', 'live', ['models'], { models: [] }],
    ['L', 'live', ['models', 'session_id', 'user_id', 'tags'], { models: [], session_id: '', user_id: '', tags: [] }],
    ['F2', 'finished', ['models'], { models: [] }],
    [
      'F',
      'finished',
      ['models', 'session_id', 'user_id', 'tags'],
      { models: [], session_id: '', user_id: '', tags: [] },
    ],
  ] as const)('of the older format %s read as runs without its missing columns', (tag, kind, without, defaults) => {
    const row = kind === 'live' ? live : finishedColumns;
    const columns = kind === 'live' ? LIVE_RUN_COLUMNS : FINISHED_RUN_COLUMNS;
    const decoded = decodeWrite(olderRecord(tag, row, columns, without));
    expect(kind === 'live' ? decoded.live : decoded.finished).toEqual([{ ...row, ...defaults }]);
  });

  it("of the older format C read as scores that replace none, each its run's only one", () => {
    const decoded = decodeWrite(olderRecord('C', score, SCORE_COLUMNS, REPLACEMENT_COLUMNS));
    expect(decoded.scores).toEqual([
      {
        ...score,
        replaces: 0,
        replaced_value: 0,
        replaced_label: '',
        run_had_value: 0,
        run_value_before: 0,
        run_value_after: score.value,
      },
    ]);
  });
});
