// Reads over settled data (src/db/settled-reads.ts) on the real engine: answered again from memory while the data
// parts of their range stay the same, read again once an insert, a merge or a delete changes them; and a report whose
// whole days were read before answers what its runs are after a run is added to one of those days.
import { randomUUID } from 'node:crypto';
import { DAY_MS, HOUR_MS } from '../../src/clock';
import { toClickHouseTime } from '../../src/db/clickhouse';
import type { SettledRange } from '../../src/db/settled-reads';
import { startTestApp, type TestApp } from '../support/app';
import { bearer, setUpProject } from '../support/fixtures';
import { insertFinishedRowOnly, postBatch } from '../ingest/run-helpers';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.close());

/**
 * A month of the past no other test writes runs into, drawn at random: the same file runs in both jest projects, and
 * a month is a partition of `runs`, whose parts the first test counts.
 */
const randomMonth = (firstYear: number, years: number) => {
  const month = Math.floor(Math.random() * years * 12);
  return { year: firstYear + Math.floor(month / 12), month: (month % 12) + 1 };
};
const day = ({ year, month }: { year: number; month: number }, date: number, hour = 0) =>
  new Date(Date.UTC(year, month - 1, date, hour));
// From 1974: the server's lightweight DELETE below rewrites its bounds into seconds since 1970, and reads them back as
// text, where the 8 digits of a time between 1970-04-26 and 1973-03-03 ('49852800') parse as a date ("4985-28-1").
const month = randomMonth(1974, 122);
const partition = `${month.year}${String(month.month).padStart(2, '0')}`;
const range = { table: 'runs', from: day(month, 1), to: day(month, 8) };

/**
 * A settled read whose answer differs at every reading: the same answer twice means the second was kept, not read.
 * It claims to read the runs of `over` alone, as a report's whole days do.
 */
const fresh = async (over: SettledRange = range) => {
  const [row] = await app.stores.ch.querySettled<{ value: string }>(
    { name: 'test.fresh', sql: 'SELECT toString(generateUUIDv4()) AS value' },
    over,
  );
  return row.value;
};

/** A finished run of the batch call, started at `startMs`, `durationMs` long, with `tags`. */
const finishedRun = (startMs: number, durationMs: number, tags: string[] = []) => {
  const [timestamp, finished_at] = [startMs, startMs + durationMs].map((ms) => new Date(ms).toISOString());
  return { agent_name: 'planner', timestamp, status: 'completed', finished_at, tags };
};

/** A finished run's row of its own project, started at `at`: a part of its own in `runs`. */
const insertRun = (at: Date) =>
  insertFinishedRowOnly(app, randomUUID(), { id: randomUUID(), timestamp: at.toISOString(), agentName: 'a' }, 5);

/** The active parts of the test's month in `runs`. */
const monthParts = async () => {
  const [row] = await app.stores.ch.query<{ n: number | string }>({
    name: 'test.parts',
    sql: `SELECT count() AS n FROM system.parts
          WHERE database = currentDatabase() AND table = 'runs' AND active AND partition = {partition:String}`,
    params: { partition },
  });
  return Number(row.n);
};

/** Waits until `condition` holds, for at most 10 s. */
async function until(condition: () => Promise<boolean>) {
  for (let i = 0; i < 100 && !(await condition()); i += 1) await new Promise((resolve) => setTimeout(resolve, 100));
}

it('answers from memory while the parts of its range stay the same, and reads again once they change', async () => {
  // Until the merge below, the parts stay as inserted: a background merge would rename them under the test's reads.
  await app.stores.ch.command('SYSTEM STOP MERGES runs');
  let afterInsert: string;
  try {
    const first = await fresh();
    expect(await fresh()).toBe(first);
    // A run outside the range: its part has no row the read could read.
    await insertRun(day(month, 9, 12));
    expect(await fresh()).toBe(first);
    // A run inside it.
    await insertRun(day(month, 2, 12));
    afterInsert = await fresh();
    expect(afterInsert).not.toBe(first);
    expect(await fresh()).toBe(afterInsert);
    expect(await monthParts()).toBeGreaterThanOrEqual(2);
  } finally {
    await app.stores.ch.command('SYSTEM START MERGES runs');
  }
  // A merge makes a new part of the month's two (OPTIMIZE's, or a background merge it found under way).
  await app.stores.ch.command(`OPTIMIZE TABLE runs PARTITION ${partition} FINAL`);
  await until(async () => (await monthParts()) === 1);
  const afterMerge = await fresh();
  expect(afterMerge).not.toBe(afterInsert);
  // A lightweight DELETE (retention's, a deleted project's) changes the parts it touches.
  await app.stores.ch.command(
    "DELETE FROM runs WHERE timestamp >= {from:DateTime64(3, 'UTC')} AND timestamp < {to:DateTime64(3, 'UTC')}",
    { from: toClickHouseTime(range.from), to: toClickHouseTime(range.to) },
  );
  expect(await fresh()).not.toBe(afterMerge);
});

it('keeps a read whatever the parameters it does not name, and reads again for another value of one', async () => {
  const read = (params: Record<string, unknown>) =>
    app.stores.ch.querySettled<{ value: string }>(
      { name: 'test.named', sql: 'SELECT toString(generateUUIDv4()) AS value, {a:UInt8} AS a', params },
      range,
    );
  const [first] = await read({ a: 1, now: '2019-03-08 10:00:00' });
  expect((await read({ a: 1, now: '2019-03-08 10:00:01' }))[0].value).toBe(first.value);
  expect((await read({ a: 2, now: '2019-03-08 10:00:01' }))[0].value).not.toBe(first.value);
});

it('reads again after a write to a part whose times a 32-bit DateTime cannot hold (before 1970)', async () => {
  const old = randomMonth(1900, 70);
  const before1970 = { table: 'runs', from: day(old, 1), to: day(old, 28) };
  await insertRun(day(old, 10, 12));
  const first = await fresh(before1970);
  expect(await fresh(before1970)).toBe(first);
  await insertRun(day(old, 15, 12));
  expect(await fresh(before1970)).not.toBe(first);
});

it("counts a run added to a 30-day summary's whole days read before, in its figures and percentiles", async () => {
  const { project, key } = await setUpProject(app);
  const now = app.clock.now().getTime();
  const window = { from: new Date(now - 30 * DAY_MS).toISOString(), to: new Date(now).toISOString() };
  const summary = async () =>
    (await app.http.get(`/projects/${project.id}/agent/summary`).query(window).set(bearer(key)).expect(200)).body
      .current;
  // Runs in the window's whole days.
  const daysAgo = (days: number) => now - days * DAY_MS;
  await postBatch(app, key, [
    finishedRun(daysAgo(10), 100),
    finishedRun(daysAgo(10), 200),
    finishedRun(daysAgo(11), 300),
  ]).expect(200);
  const before = await summary();
  expect(await summary()).toEqual(before);
  expect(before).toMatchObject({ total_runs: 3, duration_p50_ms: 200 });
  // One more run, in a day read before, longer than the others.
  await postBatch(app, key, [finishedRun(daysAgo(12), 900)]).expect(200);
  const after = await summary();
  expect(after).toMatchObject({ total_runs: 4, duration_p50_ms: 250 });
  // Between the third and the fourth duration: 300 + 0.97 × 600.
  expect(after.duration_p99_ms).toBeCloseTo(882, 6);
});

it('counts a run added to an hour a filtered run list counted before, in X-Total-Count and on its page', async () => {
  const { project, key } = await setUpProject(app);
  const now = app.clock.now().getTime();
  const window = { from: new Date(now - 7 * DAY_MS).toISOString(), to: new Date(now).toISOString(), tag: 'prod' };
  const list = () => app.http.get(`/projects/${project.id}/agent/runs`).query(window).set(bearer(key)).expect(200);
  // Runs in the window's whole hours.
  const hoursAgo = (hours: number) => now - hours * HOUR_MS;
  await postBatch(app, key, [
    finishedRun(hoursAgo(30), 50, ['prod']),
    finishedRun(hoursAgo(40), 50, ['prod']),
    finishedRun(hoursAgo(50), 50, ['dev']),
  ]).expect(200);
  const before = await list();
  expect(before.headers['x-total-count']).toBe('2');
  expect((await list()).body).toEqual(before.body);
  await postBatch(app, key, [finishedRun(hoursAgo(35), 50, ['prod', 'eu'])]).expect(200);
  const after = await list();
  expect(after.headers['x-total-count']).toBe('3');
  expect(after.body.map((run: { tags: string[] }) => run.tags)).toEqual([['prod'], ['prod', 'eu'], ['prod']]);
});
