// The export of runs (contract §11), through the real HTTP server: CSV, JSON Lines and Parquet, each read back by a
// reader of its own (csv-parse; JSON.parse per line; ClickHouse's Parquet reader), every field equal to the runs
// list's; steps nested on request; the list's filters; its refusals.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse } from 'csv-parse/sync';
import type { Response as AgentResponse } from 'superagent';
import type { Response } from 'supertest';
import { startTestApp, type TestApp } from '../support/app';
import { expectError, expectFieldError, getSteps, keyAuth, postBatch, startRun, TEST_ENV } from '../ingest/run-helpers';
import { searchProject } from './search-data';

let app: TestApp;
let project: Awaited<ReturnType<typeof searchProject>>;
// Starting the service migrates a fresh data directory: on a busy machine that takes longer than a test.
beforeAll(async () => {
  app = await startTestApp(TEST_ENV);
  project = await searchProject(app);
}, 120_000);
afterAll(() => app.close());

type Run = Record<string, unknown> & { id: string; timestamp: string };

/** The export's raw bytes (supertest buffers a body it does not know as text). */
const exportRuns = (query: Record<string, string | number | string[]>) =>
  app.http
    .get(`/projects/${project.project.id}/agent/runs/export`)
    .query({ from: project.from, to: project.to, ...query })
    .set(keyAuth(project.key))
    .buffer(true)
    .parse((res: AgentResponse, done: (error: Error | null, body: Buffer) => void) => {
      const chunks: Buffer[] = [];
      (res as unknown as NodeJS.ReadableStream).on('data', (chunk: Buffer) => chunks.push(chunk));
      (res as unknown as NodeJS.ReadableStream).on('end', () => done(null, Buffer.concat(chunks)));
    });

const listed = async (query: Record<string, string | number | string[]> = {}) =>
  (await project.list(query)).body as Run[];

/** A Parquet file read by ClickHouse's own reader, its rows as JSON. */
async function readParquet(bytes: Buffer): Promise<Record<string, unknown>[]> {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'export-')), 'runs.parquet');
  fs.writeFileSync(file, bytes);
  return app.stores.ch.query({
    name: 'test.read_parquet',
    sql: "SELECT * FROM file({file:String}, 'Parquet')",
    params: { file },
  });
}

const jsonLines = (res: Response) =>
  (res.body as Buffer)
    .toString('utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Run);

describe('the export', () => {
  it('is JSON Lines by default: every run of the list, in its order, every field equal', async () => {
    const res = await exportRuns({});
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('application/jsonl; charset=utf-8');
    expect(res.headers['content-disposition']).toMatch(
      new RegExp(`^attachment; filename="runs-${project.project.id}-\\d{8}T\\d{6}Z-\\d{8}T\\d{6}Z\\.jsonl"$`),
    );
    const runs = await listed();
    expect(runs).toHaveLength(4);
    expect(jsonLines(res)).toEqual(runs);
  });

  it('as CSV: a header of the fields, one run a line, arrays as JSON text and nulls empty', async () => {
    const res = await exportRuns({ format: 'csv' });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(res.headers['content-disposition']).toMatch(/\.csv"$/);
    const runs = await listed();
    const records = parse(res.body as Buffer, { columns: true }) as Record<string, string>[];
    expect(Object.keys(records[0])).toEqual(Object.keys(runs[0]));
    const asCsv = (value: unknown) =>
      value === null ? '' : Array.isArray(value) ? JSON.stringify(value) : String(value);
    expect(records).toEqual(runs.map((run) => Object.fromEntries(Object.entries(run).map(([k, v]) => [k, asCsv(v)]))));
  });

  it('as Parquet: one row a run, every field equal', async () => {
    const res = await exportRuns({ format: 'parquet' });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('application/vnd.apache.parquet');
    expect((res.body as Buffer).subarray(0, 4).toString()).toBe('PAR1');
    expect(await readParquet(res.body as Buffer)).toEqual(await listed());
  });

  it.each(['jsonl', 'parquet'])(
    'nests each run its steps on request (%s), as a run read alone has them',
    async (format) => {
      const res = await exportRuns({ format, include_steps: 'true' });
      expect(res.status).toBe(200);
      const exported = format === 'jsonl' ? jsonLines(res) : await readParquet(res.body as Buffer);
      const runs = await listed();
      const steps = await Promise.all(
        runs.map(async (run) => (await getSteps(app, project.key, project.project.id, run.id, run.timestamp)).body),
      );
      expect(steps.map((list) => list.length)).toEqual([1, 2, 2, 2]);
      expect(exported).toEqual(runs.map((run, i) => ({ ...run, steps: steps[i] })));
    },
  );

  it("takes the list's filters and q, and a limit", async () => {
    const queries: Record<string, string | number>[] = [
      { tag: 'prod' },
      { q: 'weather', model: 'gpt-4o' },
      { min_duration_ms: 1000 },
    ];
    for (const query of queries) {
      expect(jsonLines(await exportRuns(query))).toEqual(await listed(query));
    }
    expect(jsonLines(await exportRuns({ limit: 2 }))).toEqual(await listed({ limit: 2 }));
    expect((await exportRuns({ q: 'nothing like this', format: 'csv' })).body.toString()).toMatch(/^"?id"?,/);
  });

  it('cuts at its limit between runs of one millisecond as the list does, by id, running runs among them', async () => {
    const timestamp = new Date(Date.parse(project.to) - 5 * 60_000).toISOString();
    const finished = { agent_name: 'tied', timestamp, finished_at: timestamp, status: 'completed' };
    expect((await postBatch(app, project.key, Array(5).fill(finished))).status).toBe(200);
    await startRun(app, project.key, { agent_name: 'tied', timestamp });
    for (const limit of [1, 2, 3, 4, 5, 6, 7]) {
      const query = { agent_name: 'tied', limit };
      const exported = jsonLines(await exportRuns(query));
      expect(exported).toEqual(await listed(query));
      expect(exported).toHaveLength(Math.min(limit, 6));
    }
  });

  it('cuts at its limit across hours: it sorts the newest hours that hold the limit alone, missing none', async () => {
    // 300 runs in each of five hours (the cut takes the hours of the limit and a margin of 1,000 runs more); the
    // newest hour's last one still running.
    const hour = Math.floor(Date.parse(project.to) / 3_600_000) * 3_600_000;
    for (const hoursAgo of [1, 2, 3, 4, 5]) {
      const runs = Array.from({ length: hoursAgo === 1 ? 299 : 300 }, (_, i) => {
        const timestamp = new Date(hour - hoursAgo * 3_600_000 + 1000 + i * 1000).toISOString();
        return { agent_name: 'hourly', timestamp, finished_at: timestamp, status: 'completed' };
      });
      expect((await postBatch(app, project.key, runs)).status).toBe(200);
    }
    await startRun(app, project.key, { agent_name: 'hourly', timestamp: new Date(hour - 3_000_000).toISOString() });
    // Within an hour, a whole hour, several hours, all 1,500 runs, more than there are; and none at all.
    for (const limit of [1, 299, 300, 400, 1000, 1500, 2000]) {
      const query = { agent_name: 'hourly', limit, from: new Date(hour - 6 * 3_600_000).toISOString() };
      const exported = jsonLines(await exportRuns(query));
      // The list's pages hold 1,000 runs at most: the export is the list's first pages, one after the other.
      const pages = await Promise.all(
        [0, 1000].map((offset) => listed({ ...query, offset, limit: Math.min(1000, Math.max(1, limit - offset)) })),
      );
      expect(exported).toEqual([...pages[0], ...(limit > 1000 ? pages[1] : [])]);
      expect(exported).toHaveLength(Math.min(limit, 1500));
    }
    expect(jsonLines(await exportRuns({ agent_name: 'nobody', limit: 10 }))).toEqual([]);
  }, 60_000);

  it.each<[string, Record<string, string>, string]>([
    ['steps in CSV', { format: 'csv', include_steps: 'true' }, 'include_steps'],
    ['an unknown format', { format: 'xlsx' }, 'format'],
    ['a limit over 1,000,000', { limit: '1000001' }, 'limit'],
    ['an offset (exports have none)', { offset: '10' }, ''],
    ['a short q', { q: 'ab' }, 'q'],
  ])('refuses %s (400)', async (_, query, field) => {
    const res = await exportRuns(query);
    res.body = JSON.parse((res.body as Buffer).toString());
    if (field) expectFieldError(res, field);
    else expectError(res, 400, 'validation_failed');
  });

  it('is refused without a key of the project (401, 404 for another project)', async () => {
    const res = await app.http.get(`/projects/${project.project.id}/agent/runs/export`);
    expectError(res, 401, 'unauthenticated');
    const other = await searchProject(app);
    const theirs = await app.http.get(`/projects/${other.project.id}/agent/runs/export`).set(keyAuth(project.key));
    expect([403, 404]).toContain(theirs.status);
  });
});
