// OTLP ingest keeps section 4's promises (contract §8): a store that cannot take a write answers 503 with
// Retry-After and keeps nothing; spans acknowledged wait durably for their agent, through a restart and a kill -9;
// spans whose agent never comes become runs of their own when their trace's assembly window ends.
import { bigExport } from '../../bench/lib/big-export';
import { createProjectKey } from '../../bench/lib/service-process';
import { SPANS_PER_PART } from '../../src/otlp/mapping';
import { finishedRowCount, getRun, listRuns, storedRowCount } from '../ingest/run-helpers';
import { anotherService, startTestApp, type TestApp } from '../support/app';
import { serviceOfBlock } from '../support/child-service';
import { setUpProject } from '../support/fixtures';
import { agent, chat, exporter, listen, runOf, toolCall, tracing } from './otel';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.close());

const tracer = tracing('support-bot');
const agentTrace = () =>
  tracer.record(agent('support-bot', [chat('gpt-4o-mini'), toolCall('lookup', '{"id":1}', 'found')]));

it('a full ingest log answers 503 with Retry-After and keeps nothing of the export', async () => {
  // The same stores, a log of 1 MiB that is not flushed meanwhile.
  const small = anotherService(app, {
    ingestLog: { directory: `${app.config.ingestLog!.directory}-small`, maxBytes: 1024 * 1024 },
    ingestFlushIntervalMs: 3_600_000,
  });
  try {
    const { project, key } = await setUpProject(small);
    const heavyTrace = () =>
      tracer.record(agent('heavy', [chat('gpt-4o-mini', { 'gen_ai.input.messages': 'x'.repeat(150_000) })]));
    const server = await listen(small);
    const answers: { code: number }[] = [];
    const traces = Array.from({ length: 10 }, heavyTrace);
    // The exporter's own retries are not what this test is about: one request each, through fetch's view of it. Its
    // timeout is under the 503's Retry-After (5 s), so it gives up on a refusal at once instead of waiting to retry.
    for (const recorded of traces)
      answers.push(await exporter(server.url, key, 'protobuf', false, 4_000).send(recorded.spans));
    await server.close();
    const acknowledged = traces.filter((_, i) => answers[i].code === 0);
    expect(acknowledged.length).toBeGreaterThanOrEqual(3);
    expect(acknowledged.length).toBeLessThan(traces.length);
    const refused = await small.http
      .post('/v1/traces')
      .set('Authorization', `Bearer ${key}`)
      .set('Content-Type', 'application/json')
      .send({
        resourceSpans: [
          {
            scopeSpans: [
              {
                spans: [
                  {
                    traceId: 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa',
                    spanId: 'bbbbbbbbbbbbbbbb',
                    name: 'chat',
                    startTimeUnixNano: `${Date.now() - 10}000000`,
                    endTimeUnixNano: `${Date.now()}000000`,
                    attributes: [
                      { key: 'gen_ai.operation.name', value: { stringValue: 'chat' } },
                      { key: 'gen_ai.input.messages', value: { stringValue: 'y'.repeat(150_000) } },
                    ],
                  },
                ],
              },
            ],
          },
        ],
      });
    expect(refused.status).toBe(503);
    expect(refused.headers['retry-after']).toMatch(/^\d+$/);
    const { ids } = await listRuns(small, key, project.id);
    expect(ids.sort()).toEqual(acknowledged.map((recorded) => runOf(recorded.span('invoke_agent heavy')).id).sort());
  } finally {
    await small.otlpDecoders.close();
    await small.ingest.drain();
  }
});

it('spans acknowledged before a restart still join their agent span sent after it', async () => {
  const { project, key } = await setUpProject(app);
  const recorded = agentTrace();
  const parent = recorded.span('invoke_agent support-bot');
  const before = await listen(app);
  expect(await exporter(before.url, key).send(recorded.spans.filter((span) => span !== parent))).toEqual({ code: 0 });
  await before.close();
  // Another instance over the same stores: its assembly starts empty and reloads the open traces.
  const restarted = anotherService(app, {
    ingestLog: { directory: `${app.config.ingestLog!.directory}-restarted`, maxBytes: 1024 ** 3 },
  });
  try {
    await app.writer.flushedAll();
    const server = await listen(restarted);
    expect(await exporter(server.url, key).send([parent])).toEqual({ code: 0 });
    await server.close();
    const run = runOf(parent);
    const res = await getRun(restarted, key, project.id, run.id, run.timestamp);
    expect(res.body).toMatchObject({ agent_name: 'support-bot', total_steps: 2 });
  } finally {
    await restarted.otlpDecoders.close();
    await restarted.ingest.drain();
  }
});

it('spans whose agent span never comes become runs of their own after OTLP_ASSEMBLY_SECONDS of quiet', async () => {
  const { project, key } = await setUpProject(app);
  const recorded = agentTrace();
  const server = await listen(app);
  const chatSpan = recorded.span('chat gpt-4o-mini');
  expect(await exporter(server.url, key).send([chatSpan])).toEqual({ code: 0 });
  await server.close();
  await app.otlp.sweep();
  expect((await listRuns(app, key, project.id)).total).toBe(0);
  app.clock.advance(app.config.otlpAssemblySeconds + 1);
  await app.otlp.sweep();
  const { runs } = await listRuns(app, key, project.id);
  expect(runs).toMatchObject([
    { id: runOf(chatSpan).id, agent_name: 'support-bot', status: 'completed', total_steps: 1 },
  ]);
});

it('a big export is recorded at the flush pace: at its answer, all but its last two parts are stored', async () => {
  // No timer flush, and segments far bigger than the export: only the export's own pacing flushes while it runs.
  const paced = anotherService(app, {
    ingestLog: { ...app.config.ingestLog!, directory: `${app.config.ingestLog!.directory}-paced` },
    ingestFlushIntervalMs: 3_600_000,
  });
  try {
    const { project, key } = await setUpProject(paced);
    const parts = 4;
    const res = await paced.http
      .post('/v1/traces')
      .set('Authorization', `Bearer ${key}`)
      .set('Content-Type', 'application/x-protobuf')
      .send(bigExport('paced', parts * SPANS_PER_PART));
    expect(res.status).toBe(200);
    const stored = () => storedRowCount(app.stores.ch, 'runs', project.id);
    expect(await stored()).toBeGreaterThanOrEqual((parts - 2) * SPANS_PER_PART);
    await paced.writer.flushed(project.id);
    expect(await stored()).toBe(parts * SPANS_PER_PART);
  } finally {
    await paced.ingest.drain();
  }
}, 90_000);

it('a trace evicted from memory once assembled is read back for a re-export and for a late child', async () => {
  const { project, key } = await setUpProject(app);
  const recorded = agentTrace();
  const late = recorded.span('execute_tool lookup');
  const server = await listen(app);
  try {
    const send = exporter(server.url, key).send;
    expect(await send(recorded.spans.filter((span) => span !== late))).toEqual({ code: 0 });
    // Quiet for longer than the assembly keeps an assembled trace in memory, within the window (its rows flushed
    // meanwhile, as in those seconds: the test's clock moves, the log's backlog ages by the real one).
    app.clock.advance(15);
    await app.otlp.sweep();
    await app.writer.flushedAll();
    expect(await send(recorded.spans.filter((span) => span !== late))).toEqual({ code: 0 });
    const run = runOf(recorded.span('invoke_agent support-bot'));
    // The one run, no other: its spans read back are not runs of their own. (A re-export that comes before the
    // read-back sees the first export's rows may store the run's row again, which ClickHouse merges away:
    // docs/reports.md, "Duplicates". Under a full suite's load that happened, so the runs are told apart by id.)
    const runIds = async () => [...new Set((await listRuns(app, key, project.id)).ids)];
    expect(await runIds()).toEqual([run.id]);
    expect(await send([late])).toEqual({ code: 0 });
    const res = await getRun(app, key, project.id, run.id, run.timestamp);
    expect(res.body).toMatchObject({ total_steps: 2 });
    expect(await runIds()).toEqual([run.id]);
  } finally {
    await server.close();
  }
  // Its flushes and reads come one after the other: under a full suite on two cores, in server mode, over 30 s once.
}, 90_000);

it('a trace closed at the end of its window is settled: read later, its orphans are not recorded again', async () => {
  const { project, key } = await setUpProject(app);
  const recorded = agentTrace();
  const chatSpan = recorded.span('chat gpt-4o-mini');
  const server = await listen(app);
  try {
    const send = exporter(server.url, key).send;
    expect(await send([chatSpan])).toEqual({ code: 0 });
    app.clock.advance(app.config.otlpAssemblySeconds + 1);
    await app.otlp.sweep();
    // Quiet a while longer, the closed trace leaves memory (its rows flushed meanwhile, as in those seconds).
    app.clock.advance(15);
    await app.otlp.sweep();
    await app.writer.flushedAll();
    // The agent span comes late: the trace is read back, the chat span stays a run of its own.
    expect(await send([recorded.span('invoke_agent support-bot')])).toEqual({ code: 0 });
    app.clock.advance(app.config.otlpAssemblySeconds + 1);
    await app.otlp.sweep();
    const { runs } = await listRuns(app, key, project.id);
    expect(runs.map((run) => [run.id, run.total_steps]).sort()).toEqual(
      [
        [runOf(chatSpan).id, 1],
        [runOf(recorded.span('invoke_agent support-bot')).id, 0],
      ].sort(),
    );
    expect(await finishedRowCount(app, project.id, runOf(chatSpan).id)).toBe(1);
  } finally {
    await server.close();
  }
});

it('with INGEST_LOG=off, exports are assembled the same: children first, the parent, then a late child', async () => {
  const stateless = anotherService(app, { ingestLog: undefined });
  const { project, key } = await setUpProject(stateless);
  const recorded = tracer.record(
    agent('support-bot', [chat('gpt-4o-mini'), toolCall('lookup', '{"id":1}', 'found'), chat('gpt-4o-mini')]),
  );
  const parent = recorded.span('invoke_agent support-bot');
  const late = recorded.spans[0];
  const server = await listen(stateless);
  try {
    // Without the log, the late child's answer waits for ClickHouse to delete the run's older row: a mutation, which
    // waits for a slot in the engine's merge pool (about a second here, longer on a busy machine).
    const send = exporter(server.url, key, 'protobuf', false, 60_000).send;
    expect(await send(recorded.spans.filter((span) => span !== parent && span !== late))).toEqual({ code: 0 });
    expect(await send([parent])).toEqual({ code: 0 });
    expect(await send([late])).toEqual({ code: 0 });
  } finally {
    await server.close();
    await stateless.otlpDecoders.close();
  }
  const run = runOf(parent);
  expect((await getRun(stateless, key, project.id, run.id, run.timestamp)).body).toMatchObject({ total_steps: 3 });
  expect(await finishedRowCount(stateless, project.id, run.id)).toBe(1);
}, 90_000);

describe('kill -9', () => {
  const child = serviceOfBlock('runwatch-otlp-crash-');

  it("between the children's export and the parent's loses nothing acknowledged", async () => {
    let service = await child.start();
    try {
      const { key, projectId } = await createProjectKey(service.url);
      const traces = Array.from({ length: 5 }, agentTrace);
      const parents = traces.map((recorded) => recorded.span('invoke_agent support-bot'));
      for (const recorded of traces) {
        expect(await exporter(service.url, key).send(recorded.spans.filter((span) => !parents.includes(span)))).toEqual(
          { code: 0 },
        );
      }
      await service.kill();
      service = await child.start();
      expect(await exporter(service.url, key, 'json').send(parents)).toEqual({ code: 0 });
      for (const parent of parents) {
        const run = runOf(parent);
        const res = await fetch(
          `${service.url}/projects/${projectId}/agent/runs/${run.id}?timestamp=${encodeURIComponent(run.timestamp)}`,
          {
            headers: { Authorization: `Bearer ${key}` },
          },
        );
        expect(await res.json()).toMatchObject({ id: run.id, status: 'completed', total_steps: 2 });
      }
    } finally {
      await service.kill();
    }
  }, 90_000);
});
