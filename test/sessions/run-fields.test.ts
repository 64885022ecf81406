// A run's session, user and tags (contract §10) through the REST ingest calls: sent on start, in batch items and on
// finish, returned with every run; and an ingest log written before runs had them still replays.
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { crc32 } from 'node:zlib';
import { toClickHouseTime } from '../../src/db/clickhouse';
import { anotherService, startTestApp, type TestApp } from '../support/app';
import { setUpProject } from '../support/fixtures';
import {
  at,
  expectError,
  expectFieldError,
  keyAuth,
  listRuns,
  postBatch,
  postFinish,
  readRun,
  startRun,
  TEST_ENV,
} from '../ingest/run-helpers';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp(TEST_ENV);
});
afterAll(() => app.close());

const labels = (run: Record<string, unknown>) => ({
  session_id: run.session_id,
  user_id: run.user_id,
  tags: run.tags,
});

describe('start, finish and batch', () => {
  it('a start carries them; every read of the run and the finish response return them', async () => {
    const { project, key } = await setUpProject(app);
    const run = await startRun(app, key, { session_id: 'conv-1', user_id: 'u-42', tags: ['beta', 'eu', 'beta'] });
    const expected = { session_id: 'conv-1', user_id: 'u-42', tags: ['beta', 'eu'] };
    expect(labels(await readRun(app, key, project.id, run))).toEqual(expected);
    expect(labels((await listRuns(app, key, project.id)).runs[0])).toEqual(expected);
    const finished = await postFinish(app, key, run, { status: 'completed' });
    expect(labels(finished.body)).toEqual(expected);
    expect(labels(await readRun(app, key, project.id, run))).toEqual(expected);
  });

  it('none sent: null ids and no tags', async () => {
    const { project, key } = await setUpProject(app);
    const run = await startRun(app, key);
    expect(labels(await readRun(app, key, project.id, run))).toEqual({ session_id: null, user_id: null, tags: [] });
  });

  it('a finish sets the ids the start left null and adds tags; the same ids again are fine', async () => {
    const { project, key } = await setUpProject(app);
    const run = await startRun(app, key, { user_id: 'u-1', tags: ['a'] });
    const res = await postFinish(app, key, run, { session_id: 's-9', user_id: 'u-1', tags: ['b', 'a'] });
    expect(res.status).toBe(200);
    expect(labels(res.body)).toEqual({ session_id: 's-9', user_id: 'u-1', tags: ['a', 'b'] });
    expect(labels(await readRun(app, key, project.id, run))).toEqual(labels(res.body));
  });

  it.each([
    ['session_id', { session_id: 'other' }],
    ['user_id', { user_id: 'other' }],
  ])('a finish that would change a set %s → 409, and the run stays running', async (_field, change) => {
    const { project, key } = await setUpProject(app);
    const run = await startRun(app, key, { session_id: 's-1', user_id: 'u-1' });
    expectError(await postFinish(app, key, run, change), 409, 'conflict');
    expect(await readRun(app, key, project.id, run)).toMatchObject({ status: 'running', session_id: 's-1' });
  });

  it('a retried finish with another set id → 409; with the same ones it returns the run', async () => {
    const { key } = await setUpProject(app);
    const run = await startRun(app, key);
    expect((await postFinish(app, key, run, { session_id: 's-1' })).status).toBe(200);
    expect((await postFinish(app, key, run, { session_id: 's-1' })).body.session_id).toBe('s-1');
    expectError(await postFinish(app, key, run, { session_id: 's-2' }), 409, 'conflict');
  });

  it('a finish whose tags would bring the run past 50 distinct → 400 on tags', async () => {
    const { key } = await setUpProject(app);
    const run = await startRun(app, key, { tags: Array.from({ length: 30 }, (_, i) => `start-${i}`) });
    const more = Array.from({ length: 21 }, (_, i) => `finish-${i}`);
    expectFieldError(await postFinish(app, key, run, { tags: more }), 'tags');
    expect((await postFinish(app, key, run, { tags: more.slice(0, 20) })).body.tags).toHaveLength(50);
  });

  it('batch items carry them, started and whole runs alike', async () => {
    const { project, key } = await setUpProject(app);
    const whole = { id: randomUUID(), timestamp: at(app, -10_000) };
    const res = await postBatch(app, key, [
      { agent_name: 'a', session_id: 's-b', user_id: 'u-b', tags: ['x'] },
      { agent_name: 'b', ...whole, status: 'completed', finished_at: at(app, -5000), session_id: 's-b', tags: ['y'] },
    ]);
    expect(res.status).toBe(200);
    const [started] = res.body.results;
    expect(labels(await readRun(app, key, project.id, started))).toEqual({
      session_id: 's-b',
      user_id: 'u-b',
      tags: ['x'],
    });
    expect(labels(await readRun(app, key, project.id, whole))).toEqual({
      session_id: 's-b',
      user_id: null,
      tags: ['y'],
    });
  });

  it('a batch item that sends them without a status is a start, not a bad finish', async () => {
    const { key } = await setUpProject(app);
    const res = await postBatch(app, key, [{ agent_name: 'a', session_id: 's', user_id: 'u', tags: ['t'] }]);
    expect(res.body.results[0]).toHaveProperty('id');
  });
});

describe('validation', () => {
  const tooMany = Array.from({ length: 51 }, (_, i) => `t${i}`);
  it.each([
    ['an empty session_id', { session_id: '' }, 'session_id'],
    ['a session_id of 201 characters', { session_id: 'x'.repeat(201) }, 'session_id'],
    ['a user_id that is no string', { user_id: 7 }, 'user_id'],
    ['an empty tag', { tags: [''] }, 'tags.0'],
    ['a tag of 101 characters', { tags: ['x'.repeat(101)] }, 'tags.0'],
    ['51 distinct tags', { tags: tooMany }, 'tags'],
  ])('%s → 400', async (_label, body, field) => {
    const { key } = await setUpProject(app);
    expectFieldError(
      await app.http
        .post('/ingest/agent/runs')
        .set(keyAuth(key))
        .send({ agent_name: 'a', ...body }),
      field,
    );
  });

  it('50 distinct tags, repeated, are fine', async () => {
    const { project, key } = await setUpProject(app);
    const tags = tooMany.slice(0, 50);
    const run = await startRun(app, key, { tags: [...tags, ...tags], session_id: 'x'.repeat(200) });
    expect((await readRun(app, key, project.id, run)).tags).toEqual(tags);
  });
});

/** A segment file as the ingest log frames records: each payload after its length and CRC-32. */
function writeSegment(directory: string, payloads: string[]): void {
  const frames = payloads.flatMap((payload) => {
    const bytes = Buffer.from(payload, 'utf8');
    const header = Buffer.alloc(8);
    header.writeUInt32LE(bytes.length, 0);
    header.writeUInt32LE(crc32(bytes), 4);
    return [header, bytes];
  });
  fs.mkdirSync(directory, { recursive: true });
  fs.writeFileSync(
    path.join(directory, `${String(Date.now()).padStart(15, '0')}-000000001-0a0b0c0d.log`),
    Buffer.concat(frames),
  );
}

describe('an ingest log written before runs had sessions', () => {
  it('replays: its run rows read as runs without session, user or tags, and the head finishes them', async () => {
    const { project, key } = await setUpProject(app);
    const live = { id: randomUUID(), start: new Date(app.clock.now().getTime() - 60_000) };
    const done = { id: randomUUID(), start: new Date(app.clock.now().getTime() - 120_000) };
    const time = (date: Date) => toClickHouseTime(date);
    // The lines exactly as the previous version wrote them: tags L and F, and the columns they had then.
    const liveLine = JSON.stringify([
      time(live.start),
      project.id,
      live.id,
      0,
      0,
      'old-agent',
      'old input',
      [1],
      false,
      null,
      0,
      0,
      0,
      0,
      [],
    ]);
    const finishedLine = JSON.stringify([
      time(done.start),
      project.id,
      done.id,
      'old-agent',
      'completed',
      time(new Date(done.start.getTime() + 500)),
      500,
      'in',
      'out',
      'completed',
      '',
      false,
      null,
      1,
      10,
      0.5,
      0,
      [],
      [2],
    ]);
    const directory = path.join(path.dirname(app.config.ingestLog!.directory), `old-log-${randomUUID()}`);
    writeSegment(directory, [`${project.id}\nL${liveLine}`, `${project.id}\nF${finishedLine}`]);
    const restarted = anotherService(app, { ingestLog: { ...app.config.ingestLog!, directory } });
    try {
      const startedRun = { id: live.id, timestamp: live.start.toISOString() };
      // Finished through the head, before the replay is flushed: the old live row is known there, whole.
      const finish = await postFinish(restarted, key, startedRun, { session_id: 'late', tags: ['new'] });
      expect(finish.status).toBe(200);
      expect(finish.body).toMatchObject({ input: 'old input', metadata: [1], session_id: 'late', tags: ['new'] });
      const old = await readRun(restarted, key, project.id, { id: done.id, timestamp: done.start.toISOString() });
      expect(old).toMatchObject({
        status: 'completed',
        total_tokens: 10,
        metadata: [2],
        session_id: null,
        user_id: null,
        tags: [],
      });
      expect(fs.readdirSync(directory).filter((file) => file.endsWith('.log'))).toEqual([]);
    } finally {
      await restarted.ingest.drain();
      fs.rmSync(directory, { recursive: true, force: true });
    }
  });
});
