// The ingest log through the real service (contract §4): reads see acknowledged writes (the barrier flushes, the
// timer is not waited for), a restart replays the log before /readyz says ready, any mix of dates lands, and a row
// the engine refuses is set aside without failing the other rows of its flush.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { toClickHouseTime, type ClickHouseStore } from '../../src/db/clickhouse';
import { MAX_INSERT_BYTES, type PassStart } from '../../src/ingest/flusher';
import { boundedBarrier } from '../../src/ingest/writer';
import { anotherService, startTestApp, type TestApp } from '../support/app';
import { setUpProject } from '../support/fixtures';
import {
  at,
  expectFieldError,
  getSteps,
  keyAuth,
  listRuns,
  llm,
  postBatch,
  postFinish,
  postSteps,
  readRun,
  startRun,
  storedRowCount,
  TEST_ENV,
  type StoredTable,
  tool,
} from './run-helpers';

let app: TestApp;
// A flush interval of a minute: anything a test reads right after writing was flushed by the read's barrier.
beforeAll(async () => {
  app = await startTestApp({ ...TEST_ENV, INGEST_FLUSH_INTERVAL_MS: '60000' });
});
afterAll(() => app.close());

/** The same service over the same stores (or a wrapper of its ClickHouse store), with its own ingest log directory. */
const serviceOn = (directory: string, ch = app.stores.ch, ingestFlushMaxRestMs = app.config.ingestFlushMaxRestMs) =>
  anotherService(
    { ...app, stores: { ...app.stores, ch } },
    { ingestLog: { ...app.config.ingestLog!, directory }, ingestFlushMaxRestMs },
  );

/** The same service over a wrapper of its ClickHouse store, with an ingest log of its own in a new directory. */
function serviceOver(ch: ClickHouseStore, prefix: string, ingestFlushMaxRestMs = app.config.ingestFlushMaxRestMs) {
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  return { service: serviceOn(directory, ch, ingestFlushMaxRestMs), directory };
}

const rowCount = (table: StoredTable, projectId: string) => storedRowCount(app.stores.ch, table, projectId);

describe('read-your-writes', () => {
  it('every read right after a write sees it: run, steps, run list, summary, health', async () => {
    const { project, key } = await setUpProject(app);
    const run = await startRun(app, key, { agent_name: 'fresh' });
    expect(app.writer.backlog().rows).toBeGreaterThan(0);
    expect(await readRun(app, key, project.id, run)).toMatchObject({ status: 'running' });
    await postSteps(app, key, run, [llm(0, 'plan', { tokens: 3 })]);
    expect((await getSteps(app, key, project.id, run.id, run.timestamp)).body).toHaveLength(1);
    await postFinish(app, key, run, { status: 'completed', steps: [tool(1, 'search')] });
    expect(await readRun(app, key, project.id, run)).toMatchObject({
      status: 'completed',
      total_steps: 2,
      total_tokens: 3,
    });
    expect((await listRuns(app, key, project.id)).ids).toEqual([run.id]);
    const window = { from: at(app, -3_600_000), to: at(app, 60_000) };
    const summary = await app.http
      .get(`/projects/${project.id}/agent/summary`)
      .query(window)
      .set(keyAuth(key))
      .expect(200);
    expect(summary.body.current).toMatchObject({ total_runs: 1, completed_runs: 1, total_steps: 2 });
    const health = await app.http
      .get(`/projects/${project.id}/agent/health`)
      .query(window)
      .set(keyAuth(key))
      .expect(200);
    expect(health.body).toEqual([expect.objectContaining({ agent_name: 'fresh', total_runs: 1 })]);
  });

  it('a write is one record: the steps and the finished row of a finish land together', async () => {
    const { project, key } = await setUpProject(app);
    const run = await startRun(app, key);
    await postFinish(app, key, run, { status: 'completed', steps: [llm(0, 'a'), llm(1, 'b')] });
    await app.writer.flushed(project.id);
    expect({ runs: await rowCount('runs', project.id), steps: await rowCount('run_steps', project.id) }).toEqual({
      runs: 1,
      steps: 2,
    });
  });
  it('a read waits for the flush under way when it holds its writes, not for the next one', async () => {
    const [mine, other] = [await setUpProject(app), await setUpProject(app)];
    await startRun(app, mine.key);
    // A flush starts with my run in it; another project's run is acknowledged while it runs.
    const underWay = app.writer.flushedAll();
    const later = startRun(app, other.key);
    await app.writer.flushed(mine.project.id);
    expect(await rowCount('live_runs', mine.project.id)).toBe(1);
    await later;
    await underWay;
    // The run acknowledged after the flush began waits for a flush of its own: the read did not start one for it.
    expect(await rowCount('live_runs', other.project.id)).toBe(0);
    await app.writer.flushed(other.project.id);
    expect(await rowCount('live_runs', other.project.id)).toBe(1);
  });
});

describe('a flush after a rest', () => {
  /** How long each insert of the store under the passes takes (a pass of starts is one insert, into live_runs). */
  const INSERT_MS = 800;

  /**
   * Two passes over a store whose inserts each take INSERT_MS, the second asked for by `askers` (at once) while the
   * first runs or as soon as it ends, and holding a run acknowledged during the first: how long the first took, how
   * long after it the second began to insert, and the runs stored. `maxRestMs` is INGEST_FLUSH_MAX_REST_MS.
   */
  async function twoPasses(askers: PassStart[], asked: 'during the first' | 'after it', maxRestMs = 250) {
    const inserts: { startedAt: number; endedAt: number }[] = [];
    const { ch } = app.stores;
    const slow: ClickHouseStore = {
      ...ch,
      insertLines: async (...args) => {
        const startedAt = Date.now();
        await new Promise((resolve) => setTimeout(resolve, INSERT_MS));
        await ch.insertLines(...args);
        inserts.push({ startedAt, endedAt: Date.now() });
      },
    };
    const { service, directory } = serviceOver(slow, 'two-passes-', maxRestMs);
    try {
      const { project, key } = await setUpProject(service);
      await startRun(service, key);
      const first = service.writer.flushed(project.id);
      await startRun(service, key);
      const ask = () => Promise.all(askers.map((start) => service.writer.flushed(project.id, start)));
      const during = asked === 'during the first' ? ask() : undefined;
      await first;
      const firstPass = inserts.splice(0);
      await (during ?? ask());
      const endOfFirst = Math.max(...firstPass.map(({ endedAt }) => endedAt));
      return {
        took: endOfFirst - Math.min(...firstPass.map(({ startedAt }) => startedAt)),
        rest: Math.min(...inserts.map(({ startedAt }) => startedAt)) - endOfFirst,
        runs: await rowCount('live_runs', project.id),
      };
    } finally {
      await service.ingest.drain();
      fs.rmSync(directory, { recursive: true, force: true });
    }
  }

  it('rests as long as the last pass took, at most INGEST_FLUSH_MAX_REST_MS, holding what came meanwhile', async () => {
    for (const maxRestMs of [250, 60_000]) {
      for (const asked of ['during the first', 'after it'] as const) {
        const { took, rest, runs } = await twoPasses(['after a rest'], asked, maxRestMs);
        // A timer may fire a millisecond early by Date.now(); the second pass's own start (a seal, a read of its
        // segment) comes on top of the rest.
        const restAsLong = Math.min(took, maxRestMs) - 2 <= rest && rest < Math.min(took, maxRestMs) + INSERT_MS;
        expect({ maxRestMs, asked, tookLong: took >= INSERT_MS - 2, restAsLong, runs }).toEqual({
          maxRestMs,
          asked,
          tookLong: true,
          restAsLong: true,
          runs: 2,
        });
      }
    }
  });

  it("is a read's beside other reads: a flush asked for at once does not rest, and ends a rest under way", async () => {
    for (const askers of [['at once'], ['after a rest', 'at once']] satisfies PassStart[][]) {
      for (const asked of ['during the first', 'after it'] as const) {
        // Rested, the second pass would begin to insert as long after the first as the first took (≥ INSERT_MS).
        const { rest, runs } = await twoPasses(askers, asked, 60_000);
        const restShort = rest < INSERT_MS / 2;
        expect({ askers, asked, restShort, runs }).toEqual({ askers, asked, restShort: true, runs: 2 });
      }
    }
  });

  it("is what a read's barrier asks for while other reads wait for theirs; a read alone asks at once", async () => {
    const asked: PassStart[] = [];
    const pending: (() => void)[] = [];
    const barrier = boundedBarrier((_projectId, start = 'at once') => {
      asked.push(start);
      return new Promise<void>((resolve) => pending.push(resolve));
    }, 10_000);
    const flushAll = () => pending.splice(0).forEach((resolve) => resolve());
    const sideBySide = [barrier('p'), barrier('p')];
    flushAll();
    await Promise.all(sideBySide);
    const alone = barrier('p');
    flushAll();
    await alone;
    expect(asked).toEqual(['at once', 'after a rest', 'at once']);
  });
});

describe('a flush that fails', () => {
  it("for a reason not the store's: a read waiting for it gets 503 with Retry-After; writes land after", async () => {
    // The real store, whose inserts fail with an error of no store (as the log's own files or a bug would) at first.
    let failing = true;
    const { ch } = app.stores;
    const failingFirst: ClickHouseStore = {
      ...ch,
      insertLines: (...args) => (failing ? Promise.reject(new Error('not a store error')) : ch.insertLines(...args)),
    };
    const { service, directory } = serviceOver(failingFirst, 'failing-flush-');
    try {
      const { project, key } = await setUpProject(service);
      const run = await startRun(service, key, { agent_name: 'waits' });
      const read = await service.http.get(`/projects/${project.id}/agent/runs`).set(keyAuth(key));
      // The pass's own failure, not the barrier's wait running out.
      expect({
        status: read.status,
        code: read.body.error?.code,
        message: read.body.error?.message,
        retryAfter: read.headers['retry-after'],
      }).toEqual({
        status: 503,
        code: 'unavailable',
        message: 'ingest log is unavailable: recent writes could not be flushed; retry',
        retryAfter: '1',
      });
      failing = false;
      expect((await listRuns(service, key, project.id)).ids).toEqual([run.id]);
    } finally {
      await service.ingest.drain();
      fs.rmSync(directory, { recursive: true, force: true });
    }
  });
});

describe('restart', () => {
  it('replays what the log holds into the head at once, and says ready only once it is in ClickHouse', async () => {
    const directory = path.join(path.dirname(app.config.ingestLog!.directory), `restart-${Date.now()}`);
    const first = serviceOn(directory);
    const { project, key } = await setUpProject(first);
    const started = await startRun(first, key, { agent_name: 'replayed' });
    const finished = await startRun(first, key, { agent_name: 'replayed' });
    await postFinish(first, key, finished, { status: 'failed' });
    // The process stops with its writes in the log only: the ingest tables refuse writes, so nothing flushes.
    await app.stores.ch.command('RENAME TABLE live_runs TO live_runs_away');
    try {
      await first.ingest.drain();
      const second = serviceOn(directory);
      try {
        const notReady = await second.http.get('/readyz');
        expect({
          status: notReady.status,
          code: notReady.body.error?.code,
          retryAfter: notReady.headers['retry-after'],
        }).toEqual({ status: 503, code: 'unavailable', retryAfter: '1' });
        // The head knows the run acknowledged before the restart: its finish needs no lookup in ClickHouse.
        expect((await postFinish(second, key, started, { status: 'completed' })).status).toBe(200);
        expect((await postFinish(second, key, finished, { status: 'completed' })).status).toBe(409);
      } finally {
        await app.stores.ch.command('RENAME TABLE live_runs_away TO live_runs');
      }
      await second.writer.flushed(project.id);
      const ready = await second.http.get('/readyz').expect(200);
      expect(ready.body.ingest_backlog).toEqual({ rows: 0, bytes: 0, oldest_age_ms: 0 });
      const list = await listRuns(second, key, project.id);
      expect([...list.ids].sort()).toEqual([started.id, finished.id].sort());
      expect(list.runs.map((run) => run.status).sort()).toEqual(['completed', 'failed']);
      expect(await rowCount('runs', project.id)).toBe(2);
      await second.ingest.drain();
    } finally {
      fs.rmSync(directory, { recursive: true, force: true });
    }
  });
});

describe('a crash between an insert and the deletion of its segment', () => {
  it('replays the segment after the restart, and ClickHouse drops what it already has: nothing doubles', async () => {
    const { project, key } = await setUpProject(app);
    const runs = await Promise.all(Array.from({ length: 5 }, () => startRun(app, key)));
    await postFinish(app, key, runs[0], { status: 'completed', steps: [llm(0, 'a'), tool(1, 'search')] });
    await postBatch(app, key, [{ agent_name: 'whole', status: 'failed', steps: [llm(0, 'b')] }]);
    // Keep a copy of the sealed segments as the crash would leave them: their rows inserted, the files still there.
    const directory = app.config.ingestLog!.directory;
    await app.stores.ch.command('RENAME TABLE live_runs TO live_runs_away');
    await expect(app.writer.flushed(project.id)).rejects.toMatchObject({ status: 503 });
    await app.stores.ch.command('RENAME TABLE live_runs_away TO live_runs');
    const crashed = `${directory}-crashed`;
    fs.mkdirSync(crashed);
    for (const name of fs.readdirSync(directory).filter((file) => file.endsWith('.log')))
      fs.copyFileSync(path.join(directory, name), path.join(crashed, name));
    expect(fs.readdirSync(crashed).length).toBeGreaterThan(0);
    await app.writer.flushed(project.id);
    const before = {
      live: await rowCount('live_runs', project.id),
      runs: await rowCount('runs', project.id),
      steps: await rowCount('run_steps', project.id),
    };
    expect(before).toEqual({ live: 5, runs: 2, steps: 3 });

    const restarted = serviceOn(crashed);
    try {
      await restarted.writer.flushed(project.id);
      expect(fs.readdirSync(crashed).filter((file) => file.endsWith('.log'))).toEqual([]);
      expect({
        live: await rowCount('live_runs', project.id),
        runs: await rowCount('runs', project.id),
        steps: await rowCount('run_steps', project.id),
      }).toEqual(before);
    } finally {
      await restarted.ingest.drain();
      fs.rmSync(crashed, { recursive: true, force: true });
    }
  });
});

describe('any mix of dates', () => {
  it("a batch of whole runs over 150 months lands in one flush, with another tenant's batch beside it", async () => {
    const spread = await setUpProject(app);
    const neighbour = await setUpProject(app);
    const month = 31 * 86_400_000;
    const oldRuns = Array.from({ length: 150 }, (_, i) => ({
      agent_name: 'backfill',
      timestamp: at(app, -(i + 1) * month),
      finished_at: at(app, -(i + 1) * month + 1000),
      status: 'completed',
    }));
    const [spreadRes, neighbourRes] = await Promise.all([
      postBatch(app, spread.key, oldRuns),
      postBatch(app, neighbour.key, [{ agent_name: 'neighbour', status: 'completed' }, { agent_name: 'neighbour' }]),
    ]);
    expect(spreadRes.body.results.every((result: object) => 'id' in result)).toBe(true);
    expect(neighbourRes.status).toBe(200);
    await app.writer.flushed(spread.project.id);
    await app.writer.flushed(neighbour.project.id);
    expect(await rowCount('runs', spread.project.id)).toBe(150);
    expect(await rowCount('runs', neighbour.project.id)).toBe(1);
    expect(await rowCount('live_runs', neighbour.project.id)).toBe(1);
  });
});

describe('a big flush', () => {
  it('goes into each table in inserts of at most MAX_INSERT_BYTES of rows, and every row lands once', async () => {
    const inserts: { table: string; rows: number; bytes: number }[] = [];
    const { ch } = app.stores;
    const recording: ClickHouseStore = {
      ...ch,
      insertLines: (table, columns, lines, options) => {
        inserts.push({ table, rows: lines.length, bytes: lines.join('\n').length });
        return ch.insertLines(table, columns, lines, options);
      },
    };
    const { service, directory } = serviceOver(recording, 'big-flush-');
    try {
      const { project, key } = await setUpProject(service);
      // Three batches of 40 runs with 100 KB inputs: 12 MB of rows for `runs`, in one segment.
      const runs = Array.from({ length: 40 }, (_, i) => ({
        agent_name: 'big',
        input: `${i}`.padEnd(100_000, 'x'),
        status: 'completed',
      }));
      for (let batch = 0; batch < 3; batch += 1) expect((await postBatch(service, key, runs)).status).toBe(200);
      await service.writer.flushed(project.id);
      const runInserts = inserts.filter(({ table }) => table === 'runs');
      expect(runInserts.length).toBeGreaterThanOrEqual(3);
      expect(runInserts.reduce((sum, { rows }) => sum + rows, 0)).toBe(120);
      expect(Math.max(...runInserts.map(({ bytes }) => bytes))).toBeLessThanOrEqual(MAX_INSERT_BYTES);
      expect(await rowCount('runs', project.id)).toBe(120);
    } finally {
      await service.ingest.drain();
      fs.rmSync(directory, { recursive: true, force: true });
    }
  });
});

describe('bad rows', () => {
  it('a lone UTF-16 surrogate is a 400 at the door, on every ingest call; batch neighbours are stored', async () => {
    const { project, key } = await setUpProject(app);
    const lone = 'agent \ud800';
    expectFieldError(
      await app.http.post('/ingest/agent/runs').set(keyAuth(key)).send({ agent_name: lone }),
      'agent_name',
    );
    const run = await startRun(app, key);
    expectFieldError(await postSteps(app, key, run, [llm(0, lone)]), 'steps.0.output');
    expectFieldError(await postFinish(app, key, run, { status: 'completed', output: lone }), 'output');
    const batch = await postBatch(app, key, [{ agent_name: lone }, { agent_name: 'fine' }]);
    expect(batch.body.results[0].error.code).toBe('validation_failed');
    expect((await listRuns(app, key, project.id)).total).toBe(2);
  });

  it("a row the engine refuses is dead-lettered; the rest of its flush lands, other tenants' too", async () => {
    const mine = await setUpProject(app);
    const other = await setUpProject(app);
    const starts = await Promise.all([
      ...Array.from({ length: 5 }, () => startRun(app, mine.key)),
      ...Array.from({ length: 5 }, () => startRun(app, other.key)),
    ]);
    // A row that got past validation (an older version, a gap in it): written straight to the log.
    const badId = '0190b3a5-6c4e-7d3f-8a1b-2c3d4e5f6a70';
    await app.writer.write({
      projectId: mine.project.id,
      finished: [],
      replaced: [],
      steps: [],
      traces: [],
      scores: [],
      live: [
        {
          project_id: mine.project.id,
          timestamp: toClickHouseTime(app.clock.now()),
          id: badId,
          version: 0,
          finished: 0,
          agent_name: 'bad \ud800',
          input: '',
          metadata: [],
          loop_detected: false,
          loop_step_index: null,
          total_steps: 0,
          total_tokens: 0,
          total_cost_usd: 0,
          tool_calls: 0,
          tool_names: [],
          models: [],
          session_id: '',
          user_id: '',
          tags: [],
        },
      ],
    });
    await app.writer.flushed(mine.project.id);
    expect((await listRuns(app, mine.key, mine.project.id)).total).toBe(5);
    expect((await listRuns(app, other.key, other.project.id)).total).toBe(5);
    expect(starts).toHaveLength(10);
    const deadLetters = fs
      .readFileSync(path.join(app.config.ingestLog!.directory, 'dead-letter.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(deadLetters).toEqual([
      expect.objectContaining({ table: 'live_runs', reason: expect.stringContaining('surrogate') }),
    ]);
    expect(deadLetters[0].row).toContain(badId);
    expect(app.writer.backlog().rows).toBe(0);
  });
});

describe('INGEST_LOG=off', () => {
  it('writes to ClickHouse before answering (server-batched inserts); every call works as with the log', async () => {
    const stateless = anotherService(app, { ingestLog: undefined });
    try {
      const { project, key } = await setUpProject(stateless);
      const run = await startRun(stateless, key);
      // Nothing waits in a log: the row is in ClickHouse already, without any flush.
      expect(await rowCount('live_runs', project.id)).toBe(1);
      expect((await postSteps(stateless, key, run, [llm(0, 'a', { tokens: 2 })])).status).toBe(200);
      expect((await postFinish(stateless, key, run, { status: 'completed' })).body).toMatchObject({
        status: 'completed',
        total_tokens: 2,
      });
      expect((await postBatch(stateless, key, [{ agent_name: 'whole', status: 'failed' }])).status).toBe(200);
      expect({ runs: await rowCount('runs', project.id), steps: await rowCount('run_steps', project.id) }).toEqual({
        runs: 2,
        steps: 1,
      });
      expect((await stateless.http.get('/readyz').expect(200)).body.ingest_backlog).toEqual({
        rows: 0,
        bytes: 0,
        oldest_age_ms: 0,
      });
    } finally {
      await stateless.ingest.drain();
    }
  });
});

describe('two instances (server mode)', () => {
  it('a finish on another instance, for a run started moments ago, waits for the start to flush, not 404', async () => {
    const directory = path.join(path.dirname(app.config.ingestLog!.directory), `instance-b-${Date.now()}`);
    const other = anotherService(app, { ingestMissRetryMs: 3000, ingestLog: { ...app.config.ingestLog!, directory } });
    try {
      const { project, key } = await setUpProject(app);
      const run = await startRun(app, key, { timestamp: at(app, -100) });
      // The start is in the first instance's log only; it flushes half a second after the finish reaches the other.
      const finish = postFinish(other, key, run, { status: 'completed' });
      setTimeout(() => void app.writer.flushed(project.id), 500);
      expect((await finish).body).toMatchObject({ id: run.id, status: 'completed' });
      // A run older than the flush interval is not waited for: 404 at once.
      const old = { id: '0190b3a5-6c4e-7d3f-8a1b-2c3d4e5f6a71', timestamp: at(app, -60_000) };
      const startedAt = Date.now();
      expect((await postFinish(other, key, old, { status: 'completed' })).status).toBe(404);
      expect(Date.now() - startedAt).toBeLessThan(1000);
    } finally {
      await other.ingest.drain();
      fs.rmSync(directory, { recursive: true, force: true });
    }
  });
});
