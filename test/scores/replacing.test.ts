// What a score row says it replaces and changes (src/scores/tables.ts `replacing`), which the rollups count by
// (schema/clickhouse/0008, 0009): the latest of its pair, by version, and its run's value before and after it.
import { REPLACES_NONE, replacing, type ScoreRow } from '../../src/scores/tables';

const score = (version: number, value: number, source: ScoreRow['source'] = 'eval'): ScoreRow => ({
  run_timestamp: '2026-11-28 09:00:00.000',
  project_id: '0190b3a5-6c4e-7d3f-8a1b-2c3d4e5f6a70',
  run_id: '0190b3a5-6c4e-7d3f-8a1b-2c3d4e5f6a71',
  id: `0190b3a5-6c4e-7d3f-8a1b-2c3d4e5f6a${String(version).padStart(2, '0')}`,
  version,
  agent_name: 'planner',
  name: 'quality',
  source,
  data_type: 'numeric',
  value,
  label: '',
  comment: '',
  created_at: '2026-11-28 09:00:01.000',
  ...REPLACES_NONE,
  run_value_after: value,
});

describe('replacing', () => {
  it('a newer score of a pair replaces its latest; another source changes the run value to the mean of both', () => {
    const [newer, human] = replacing([score(10, 0.9)], [score(20, 0.5), score(21, 1, 'human')]);
    expect(newer).toMatchObject({ replaces: 1, replaced_value: 0.9, run_had_value: 1, run_value_before: 0.9 });
    expect(newer.run_value_after).toBe(0.5);
    expect(human).toMatchObject({ replaces: 0, run_had_value: 1, run_value_before: 0.5, run_value_after: 0.75 });
  });

  it("an older version than its pair's latest counts as nothing: it replaces itself, keeps the run value", () => {
    const [older, next] = replacing([score(10, 0.9)], [score(5, 0.1), score(30, 0.3)]);
    expect(older).toMatchObject({ replaces: 1, replaced_value: 0.1, run_had_value: 1 });
    expect([older.run_value_before, older.run_value_after]).toEqual([0.9, 0.9]);
    // The next one replaces the latest, not the older version.
    expect(next).toMatchObject({ replaces: 1, replaced_value: 0.9, run_value_before: 0.9, run_value_after: 0.3 });
  });
});
