// The report statements as ClickHouse receives them, kept as golden files (test/reports/golden/*.sql): the SQL is
// composed from fragments, so a change to any fragment shows up here, in review, as the SQL it renders. A statement
// that differs from its file fails; `UPDATE_GOLDEN=1 npm test -- test/reports/golden-sql.test.ts` writes the files
// anew, to be read and committed with the change.
import fs from 'node:fs';
import path from 'node:path';
import * as q from '../../src/reports/queries';
import { selectScopedSignals } from '../../src/reports/signals';

const GOLDEN = path.join(__dirname, 'golden');

const STATEMENTS: Record<string, string> = {
  'summary.raw': q.selectSummary([], 'raw'),
  'summary.rollups': q.selectSummary([], 'rollups'),
  'summary.rollups.agent': q.selectSummary(['agent_name'], 'rollups'),
  'health.raw': q.selectHealth('raw'),
  'health.rollups': q.selectHealth('rollups'),
  'timeseries.minute.raw': q.selectTimeseries([], 'minute', 'raw'),
  'timeseries.hour.rollups': q.selectTimeseries(['agent_name'], 'hour', 'rollups'),
  'runs.page-keys': q.selectPageKeys(['agent_name', 'status', 'loop_detected']),
  'runs.page-rows': q.selectPageRows(['finished', 'live']),
  'runs.page-rows.live': q.selectPageRows(['live']),
  'runs.count': q.countRuns(['agent_name']),
  // The alert preview: a counter signal (rollups, or raw rows over a short window), a percentile signal (one pass over
  // the finished rows, whatever the window).
  'preview.completion-rate.rollups': q.selectSummary([], 'rollups', ['completion_rate', 'finished_runs']),
  'preview.completion-rate.raw.agent': q.selectSummary(['agent_name'], 'raw', ['completion_rate', 'finished_runs']),
  'preview.duration-p95': q.selectSummary([], 'rollups', ['duration_p95_ms', 'finished_runs']),
  // The evaluator's one query per project: for scopes of all agents, of some agents, and of both.
  'signals.scoped.all': selectScopedSignals('all'),
  'signals.scoped.agents': selectScopedSignals('agents'),
  'signals.scoped.both': selectScopedSignals('both'),
};

const update = process.env.UPDATE_GOLDEN === '1';

it.each(Object.keys(STATEMENTS))('%s renders as its golden file', (name) => {
  const file = path.join(GOLDEN, `${name}.sql`);
  const rendered = `${STATEMENTS[name].trim()}\n`;
  if (update) fs.writeFileSync(file, rendered);
  expect(fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : `(no file ${name}.sql: run with UPDATE_GOLDEN=1)`).toBe(
    rendered,
  );
});

it('every golden file belongs to a statement', () => {
  expect(fs.readdirSync(GOLDEN).sort()).toEqual(
    Object.keys(STATEMENTS)
      .map((name) => `${name}.sql`)
      .sort(),
  );
});
