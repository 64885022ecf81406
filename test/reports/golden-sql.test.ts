// The report statements as ClickHouse receives them, kept as golden files (test/reports/golden/*.sql): the SQL is
// composed from fragments, so a change to any fragment shows up here, in review, as the SQL it renders. A statement
// that differs from its file fails; `UPDATE_GOLDEN=1 npm test -- test/reports/golden-sql.test.ts` writes the files
// anew, to be read and committed with the change.
import fs from 'node:fs';
import path from 'node:path';
import { selectBucketCounts, selectDurationCounts, type SideStatement } from '../../src/reports/durations';
import * as q from '../../src/reports/queries';
import { selectExport } from '../../src/reports/run-export';
import {
  selectFinishedHourCounts,
  selectFinishedTotal,
  selectLiveHourCounts,
  selectWholeHourCountsByRows,
  selectNewestKeys,
  selectPageKeys,
  selectPageRows,
} from '../../src/reports/run-list';
import { selectScopedSignals } from '../../src/reports/signals';
import { selectScoreMeanFromRollups, selectScoreReport } from '../../src/scores/queries';

const GOLDEN = path.join(__dirname, 'golden');

/** A step's statements, one per side of the window, named by their side. */
const sides = (name: string, statements: readonly SideStatement[]) =>
  Object.fromEntries(statements.map(({ side, sql }) => [`${name}.${side}`, sql]));

const STATEMENTS: Record<string, string> = {
  'summary.raw': q.selectSummary([], 'raw'),
  'summary.rollups': q.selectSummary([], 'rollups'),
  'summary.rollups.agent': q.selectSummary(['agent_name'], 'rollups'),
  'health.raw': q.selectHealth('raw'),
  'health.rollups': q.selectHealth('rollups'),
  'timeseries.minute.raw': q.selectTimeseries([], 'minute', 'raw'),
  'timeseries.hour.rollups': q.selectTimeseries(['agent_name'], 'hour', 'rollups'),
  'runs.per-hour': selectFinishedHourCounts(['agent_name', 'status', 'loop_detected']),
  'runs.per-hour.running': selectLiveHourCounts(['agent_name', 'status', 'loop_detected']),
  'runs.page-keys': selectPageKeys(['agent_name', 'status', 'loop_detected']),
  'runs.newest-keys': selectNewestKeys([]),
  'runs.page-rows': selectPageRows(['finished', 'live']),
  'runs.page-rows.live': selectPageRows(['live']),
  // Finding runs (contract §11): filters counted from rows, the text search's keys; the export, with steps.
  'runs.per-hour.search': selectFinishedHourCounts(['tag', 'model', 'min_duration_ms', 'max_cost_usd', 'q']),
  'runs.per-whole-hour.search': selectWholeHourCountsByRows(['tag', 'tool_name', 'min_duration_ms', 'max_cost_usd']),
  'runs.total.search': selectFinishedTotal(['tag', 'tool_name', 'min_duration_ms', 'max_cost_usd']),
  'runs.per-hour.running.search': selectLiveHourCounts(['tag', 'model', 'min_duration_ms', 'max_cost_usd', 'q']),
  'runs.export.steps': selectExport({ tag: ['prod'], q: 'refund' }, 'native', true),
  'runs.export.csv': selectExport({}, 'json', false),
  // Exact percentiles from the duration projections, each step a statement per side of the window (days, hours, rows):
  // the summary's (per window) and a time series' (per hour bucket).
  ...sides('durations.bucket-counts', selectBucketCounts({ is_current: q.GROUP_KEYS.is_current }, [], 'day')),
  ...sides('durations.duration-counts', selectDurationCounts({ is_current: q.GROUP_KEYS.is_current }, [], 'day')),
  ...sides(
    'durations.bucket-counts.hour.agent',
    selectBucketCounts(q.timeseriesKeys('hour'), [q.SUMMARY_FILTERS.agent_name], 'hour'),
  ),
  // The alert preview: a counter signal (rollups, or raw rows over a short window), a percentile signal (one pass over
  // the finished rows, whatever the window).
  'preview.completion-rate.rollups': q.selectSummary([], 'rollups', ['completion_rate', 'finished_runs']),
  'preview.completion-rate.raw.agent': q.selectSummary(['agent_name'], 'raw', ['completion_rate', 'finished_runs']),
  'preview.duration-p95': q.selectSummary([], 'rollups', ['duration_p95_ms', 'finished_runs']),
  // The evaluator's one query per project: for scopes of all agents, of some agents, and of both.
  'signals.scoped.all': selectScopedSignals('all'),
  'signals.scoped.agents': selectScopedSignals('agents'),
  'signals.scoped.both': selectScopedSignals('both'),
  // The score report (contract §10): rollups of the latest scores, and their rows at the windows' edges.
  'scores.report.agent': selectScoreReport(['agent_name']),
  'scores.mean.agent': selectScoreMeanFromRollups(['name', 'agent_name']),
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
