// The score report and score_mean from rollups (schema/clickhouse/0008, 0009): a score that replaces an earlier one
// of its pair takes that one out of the rollups, however it was replaced (a re-sent id, a new score of the pair, a
// retried batch, two writes at once), and one that changes its run's value takes the run's earlier value out, so that
// long windows (whole days and hours from the rollups) count exactly what the latest scores hold: the same counts,
// means, medians and labels as a model of the scores sent, and as the same runs read from rows (a window without a
// whole hour).
import { randomUUID } from 'node:crypto';
import { startTestApp, type TestApp } from '../support/app';
import { bearer, setUpProject } from '../support/fixtures';
import { keyAuth, postBatch, TEST_ENV } from '../ingest/run-helpers';
import { toClickHouseTime } from '../../src/db/clickhouse';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp(TEST_ENV);
});
afterAll(() => app.close());

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const iso = (ms: number) => new Date(ms).toISOString();

/** A deterministic stream of numbers in [0, 1), so that a failure reproduces. */
function numbers(seed: number) {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    return state / 2_147_483_648;
  };
}

type Sent = { run: string; at: number; agent: string; name: string; source: string; value: number | boolean | string };

/** The report a model of the latest score of each (run, name, source) gives over [from, to) and the window before. */
function expectedReport(sent: readonly Sent[], from: number, to: number, agent?: string) {
  const latest = new Map<string, Sent>();
  for (const score of sent) latest.set(`${score.run} ${score.name} ${score.source}`, score);
  const inRange = (start: number, end: number) =>
    [...latest.values()].filter((s) => s.at >= start && s.at < end && (agent === undefined || s.agent === agent));
  const current = inRange(from, to);
  const previous = inRange(from - (to - from), from);
  const names = [...new Set(current.map((score) => score.name))].sort();
  const numeric = (value: Sent['value']) => (value === true ? 1 : value === false ? 0 : Number(value));
  const mean = (scores: Sent[]) =>
    scores.length === 0 ? null : scores.reduce((sum, s) => sum + numeric(s.value), 0) / scores.length;
  return names.map((name) => {
    const now = current.filter((score) => score.name === name);
    const before = previous.filter((score) => score.name === name);
    const type = typeof now[0].value;
    const values = now.map((score) => numeric(score.value)).sort((a, b) => a - b);
    const middle = (values.length - 1) / 2;
    const median = values[Math.floor(middle)] + (middle % 1) * (values[Math.ceil(middle)] - values[Math.floor(middle)]);
    const labels: Record<string, number> = {};
    for (const score of now) labels[String(score.value)] = (labels[String(score.value)] ?? 0) + 1;
    return {
      name,
      count: now.length,
      prev_count: before.length,
      mean: type === 'string' ? null : mean(now),
      prev_mean: type === 'string' ? null : mean(before),
      p50: type === 'number' ? median : null,
      values: type === 'string' ? labels : null,
    };
  });
}

/**
 * score_mean of a name over [from, to) as a model of the scores sent says: each run's value the mean of its latest
 * numeric or boolean score from each source, the signal their mean.
 */
function expectedMean(sent: readonly Sent[], from: number, to: number, name: string, agent?: string) {
  const latest = new Map<string, Sent>();
  for (const score of sent) latest.set(`${score.run} ${score.name} ${score.source}`, score);
  const byRun = new Map<string, number[]>();
  for (const score of latest.values()) {
    if (score.name !== name || typeof score.value === 'string' || score.at < from || score.at >= to) continue;
    if (agent !== undefined && score.agent !== agent) continue;
    byRun.set(score.run, [...(byRun.get(score.run) ?? []), Number(score.value)]);
  }
  const values = [...byRun.values()].map((run) => run.reduce((sum, value) => sum + value, 0) / run.length);
  const value = values.length === 0 ? 0 : values.reduce((sum, v) => sum + v, 0) / values.length;
  return { value: Number(value.toFixed(9)), sample_count: values.length };
}

/** Report entries with their means and medians rounded (a sum of counted values against a sum of values). */
const rounded = (entries: Record<string, unknown>[]) =>
  entries.map((entry) => ({
    ...entry,
    data_type: undefined,
    mean: entry.mean === null ? null : Number((entry.mean as number).toFixed(9)),
    prev_mean: entry.prev_mean === null ? null : Number((entry.prev_mean as number).toFixed(9)),
    p50: entry.p50 === null ? null : Number((entry.p50 as number).toFixed(9)),
  }));

async function projectWithReport() {
  const setup = await setUpProject(app);
  const report = async (from: number, to: number, agent?: string) => {
    const res = await app.http
      .get(`/projects/${setup.project.id}/agent/scores`)
      .query({ from: iso(from), to: iso(to), ...(agent ? { agent_name: agent } : {}) })
      .set(keyAuth(setup.key));
    expect(res.status).toBe(200);
    return res.body as Record<string, unknown>[];
  };
  const postScores = (run: { id: string; timestamp: string }, scores: unknown[]) =>
    app.http
      .post(`/ingest/agent/runs/${run.id}/scores`)
      .set(keyAuth(setup.key))
      .send({ timestamp: run.timestamp, scores });
  return { ...setup, report, postScores };
}

describe('the score report from rollups', () => {
  it('counts the latest scores exactly, however they were replaced, over windows of every shape', async () => {
    const setup = await projectWithReport();
    const { key, report, postScores } = setup;
    const random = numbers(7);
    const now = app.clock.now().getTime();
    const agents = ['planner', 'writer'];
    const sent: Sent[] = [];
    // Runs over 40 days, finished; the last 40 running, started within the last day (as a running run must be).
    const runs = Array.from({ length: 120 }, (_, i) => ({
      id: randomUUID(),
      at: now - Math.floor(random() * (i < 80 ? 40 * DAY : 23 * HOUR)),
      agent: agents[i % 2],
    }));
    const label = () => ['a', 'b', 'c'][Math.floor(random() * 3)];
    const valueOf = (name: string) =>
      name === 'quality' ? Math.round(random() * 20) / 20 : name === 'ok' ? random() < 0.7 : label();
    const firstScores = () =>
      ['quality', 'ok', 'topic']
        .filter(() => random() < 0.8)
        .map((name) => ({ name, value: valueOf(name), source: 'eval', id: randomUUID() }));
    const scoresOf = new Map(runs.map((run) => [run.id, firstScores()]));
    // Runs with their scores, sent twice (a retried batch): a retried whole run is not written again; a retried start
    // writes its scores again, each replacing itself.
    const items = runs.map((run, i) => ({
      id: run.id,
      agent_name: run.agent,
      timestamp: iso(run.at),
      ...(i < 80 ? { finished_at: iso(run.at + 1000), status: 'completed' } : {}),
      ...(scoresOf.get(run.id)!.length > 0 ? { scores: scoresOf.get(run.id) } : {}),
    }));
    for (let attempt = 0; attempt < 2; attempt++) {
      const answer = await postBatch(app, key, items);
      expect(answer.body.results.filter((result: object) => !('id' in result))).toEqual([]);
    }
    for (const run of runs)
      for (const score of scoresOf.get(run.id)!)
        sent.push({ run: run.id, at: run.at, agent: run.agent, name: score.name, source: 'eval', value: score.value });

    // Then, run by run: an id re-sent with another value, a new score of the pair without an id, another source.
    for (const run of runs.filter(() => random() < 0.5)) {
      const target = { id: run.id, timestamp: iso(run.at) };
      const first = scoresOf.get(run.id)!;
      const update: { name: string; value: unknown; source: string; id?: string }[] = [];
      if (first.length > 0 && random() < 0.5) update.push({ ...first[0], value: valueOf(first[0].name) });
      if (random() < 0.5) update.push({ name: 'quality', value: valueOf('quality'), source: 'eval' });
      if (random() < 0.3) update.push({ name: 'quality', value: valueOf('quality'), source: 'human' });
      if (update.length === 0) continue;
      expect((await postScores(target, update)).status).toBe(200);
      for (const score of update)
        sent.push({ ...run, run: run.id, name: score.name, source: score.source, value: score.value as Sent['value'] });
    }

    const windows: [string, number, number][] = [
      ['30 days to now', now - 30 * DAY, now + 1],
      ['7 days ending mid-hour', now - 9 * DAY - 17 * MINUTE, now - 2 * DAY - 17 * MINUTE],
      ['36 hours from mid-hour', now - 3 * DAY + 7 * MINUTE, now - 1.5 * DAY + 7 * MINUTE],
      ['40 days on day edges', Math.floor((now - 40 * DAY) / DAY) * DAY, Math.floor(now / DAY) * DAY],
    ];
    for (const [, from, to] of windows) {
      expect(rounded(await report(from, to))).toEqual(rounded(expectedReport(sent, from, to)));
      expect(rounded(await report(from, to, 'writer'))).toEqual(rounded(expectedReport(sent, from, to, 'writer')));
    }
    expect(expectedReport(sent, now - 30 * DAY, now + 1)[0].count).toBeGreaterThan(30);

    // score_mean, as previews read it over [now − window, now): whole hours from the rollup of runs' values.
    const preview = async (name: string, seconds: number, agent?: string) => {
      const res = await app.http
        .post(`/admin/orgs/${setup.org.id}/projects/${setup.project.id}/alert-rules/preview`)
        .set(bearer(setup.admin.token))
        .send({
          signal: `score_mean:${name}`,
          comparator: 'lt',
          threshold: 0.5,
          window_seconds: seconds,
          min_requests: 1,
          ...(agent ? { agent_name: agent } : {}),
        });
      expect(res.status).toBe(200);
      return { value: Number(res.body.value.toFixed(9)), sample_count: res.body.sample_count };
    };
    const at = app.clock.now().getTime();
    for (const seconds of [30 * 86_400, 7 * 86_400, 36 * 3_600, 300])
      for (const name of ['quality', 'ok', 'topic']) {
        expect(await preview(name, seconds)).toEqual(expectedMean(sent, at - seconds * 1000, at, name));
        expect(await preview(name, seconds, 'planner')).toEqual(
          expectedMean(sent, at - seconds * 1000, at, name, 'planner'),
        );
      }
    expect(expectedMean(sent, at - 30 * DAY, at, 'quality').sample_count).toBeGreaterThan(30);
  });

  it('two writes of one pair at once: the later replaces the earlier, as the rows say', async () => {
    const { key, report, postScores } = await projectWithReport();
    // The run's hour [hh:00, hh+1:00) is whole inside the long window; the short one, within the hour, reads rows.
    const hour = Math.floor(app.clock.now().getTime() / HOUR) * HOUR - 5 * HOUR;
    const run = { id: randomUUID(), timestamp: iso(hour + 30 * MINUTE) };
    const item = { ...run, agent_name: 'planner', finished_at: iso(hour + 31 * MINUTE), status: 'completed' };
    expect((await postBatch(app, key, [item])).status).toBe(200);
    expect((await postScores(run, [{ name: 'quality', value: 0.5 }])).status).toBe(200);
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) => postScores(run, [{ name: 'quality', value: i / 10 }])),
    );
    expect(answers.map((answer) => answer.status)).toEqual(Array(12).fill(200));
    const fromRows = await report(hour + MINUTE, hour + 59 * MINUTE);
    const fromRollups = await report(hour - 10 * DAY, hour + 10 * HOUR);
    expect(fromRows).toEqual([expect.objectContaining({ name: 'quality', count: 1 })]);
    expect(fromRollups).toEqual(fromRows.map((entry) => ({ ...entry, prev_count: 0, prev_mean: null })));
  });

  it('retention raised after the job trimmed a project: the rollups still count what the scores hold', async () => {
    const { project, org, admin, key, report } = await projectWithReport();
    const patchRetention = (days: number) =>
      app.http
        .patch(`/admin/orgs/${org.id}/projects/${project.id}`)
        .set(bearer(admin.token))
        .send({ retention_days: days })
        .expect(200);
    await patchRetention(7);
    // A scored run every 5 hours over 12 days.
    const now = app.clock.now().getTime();
    const items = Array.from({ length: 58 }, (_, i) => ({
      agent_name: 'planner',
      timestamp: iso(now - (i + 1) * 5 * HOUR),
      finished_at: iso(now - (i + 1) * 5 * HOUR + 1000),
      status: 'completed',
      scores: [{ name: 'quality', value: (i % 10) / 10 }],
    }));
    expect((await postBatch(app, key, items)).status).toBe(200);
    await app.writer.flushedAll();
    await app.retentionDeletion.run();
    await patchRetention(30);
    // What the scores hold, read from their rows, against the report of the same windows from the rollups.
    const [stored] = await app.stores.ch.query<{ current: string; previous: string }>({
      name: 'test.stored_scores',
      sql: `SELECT countIf(run_timestamp >= {from:DateTime64(3, 'UTC')}) AS current,
                     countIf(run_timestamp < {from:DateTime64(3, 'UTC')}) AS previous
              FROM latest_scores FINAL
              WHERE project_id = {project:UUID} AND run_timestamp >= {before:DateTime64(3, 'UTC')}
                AND run_timestamp < {to:DateTime64(3, 'UTC')}`,
      params: {
        project: project.id,
        before: toClickHouseTime(new Date(now - 20 * DAY)),
        from: toClickHouseTime(new Date(now - 10 * DAY)),
        to: toClickHouseTime(new Date(now + 1)),
      },
    });
    const [entry] = await report(now - 10 * DAY, now + 1);
    expect([entry.count, entry.prev_count]).toEqual([Number(stored.current), Number(stored.previous)]);
    expect(Number(stored.current)).toBeGreaterThan(20);
  }, 120_000);
});
