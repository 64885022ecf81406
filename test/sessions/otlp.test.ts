// A run's session, user and tags from OpenTelemetry spans (contract §10), with the real OpenTelemetry SDK and its
// OTLP exporter as the client: the GenAI conventions, OpenInference's and OpenLLMetry's attributes, on the agent span,
// on a step below it, or on the resource; and a conversation of several traces read as one session.
import { getRun } from '../ingest/run-helpers';
import { agent, chat, exporter, listen, runOf, tracing, type SpanSpec } from '../otlp/otel';
import { startTestApp, type TestApp } from '../support/app';
import { bearer, setUpProject } from '../support/fixtures';

let app: TestApp;
let server: Awaited<ReturnType<typeof listen>>;
beforeAll(async () => {
  app = await startTestApp();
  server = await listen(app);
});
afterAll(async () => {
  await server.close();
  await app.close();
});

/** Records a trace, exports it with the SDK's protobuf exporter and reads back the run of its root span. */
async function runOfTrace(spec: SpanSpec, tracer = tracing('support-bot')) {
  const { key, project } = await setUpProject(app);
  const recorded = tracer.record(spec);
  const sent = await exporter(server.url, key).send(recorded.spans);
  expect(sent.error?.message ?? sent.code).toBe(0);
  const res = await getRun(app, key, project.id, ...(Object.values(runOf(recorded.spans.at(-1)!)) as [string, string]));
  expect(res.status).toBe(200);
  return { session_id: res.body.session_id, user_id: res.body.user_id, tags: res.body.tags };
}

describe('where the attributes come from', () => {
  it.each([
    [
      'GenAI: gen_ai.conversation.id, user.id',
      { 'gen_ai.conversation.id': 'conv-1', 'user.id': 'u-1' },
      { session_id: 'conv-1', user_id: 'u-1', tags: [] },
    ],
    [
      'OpenInference: session.id, user.id, tag.tags',
      { 'session.id': 'oi-1', 'user.id': 'u-2', 'tag.tags': ['beta', 'eu', 'beta'] },
      { session_id: 'oi-1', user_id: 'u-2', tags: ['beta', 'eu'] },
    ],
    [
      "OpenLLMetry's association properties",
      {
        'traceloop.association.properties.session_id': 'tl-1',
        'traceloop.association.properties.user_id': 'u-3',
      },
      { session_id: 'tl-1', user_id: 'u-3', tags: [] },
    ],
    ['enduser.id', { 'enduser.id': 'u-4' }, { session_id: null, user_id: 'u-4', tags: [] }],
    ['none', {}, { session_id: null, user_id: null, tags: [] }],
  ])('on the agent span: %s', async (_label, attributes, expected) => {
    expect(await runOfTrace(agent('planner', [chat('gpt-4o')], attributes))).toEqual(expected);
  });

  it("on a model call below the agent span, when the agent span has none; the agent span's own win", async () => {
    const onChild = agent('planner', [chat('gpt-4o'), chat('gpt-4o', { 'gen_ai.conversation.id': 'from-chat' })]);
    expect((await runOfTrace(onChild)).session_id).toBe('from-chat');
    const both = agent('planner', [chat('gpt-4o', { 'gen_ai.conversation.id': 'from-chat' })], {
      'gen_ai.conversation.id': 'from-agent',
    });
    expect((await runOfTrace(both)).session_id).toBe('from-agent');
  });

  it("on the resource, for every span of it; a span's own attribute wins", async () => {
    const tracer = tracing('kiosk', { 'user.id': 'kiosk-7', 'session.id': 'resource-session' });
    expect(await runOfTrace(agent('planner', [chat('gpt-4o')]), tracer)).toEqual({
      session_id: 'resource-session',
      user_id: 'kiosk-7',
      tags: [],
    });
    expect((await runOfTrace(agent('planner', [], { 'session.id': 'own' }), tracer)).session_id).toBe('own');
  });

  it('ids are cut to 200 characters and numbers taken as text; an empty one is none', async () => {
    expect(
      await runOfTrace(agent('planner', [], { 'gen_ai.conversation.id': 'x'.repeat(300), 'user.id': 42 })),
    ).toEqual({ session_id: 'x'.repeat(200), user_id: '42', tags: [] });
    expect((await runOfTrace(agent('planner', [], { 'gen_ai.conversation.id': '' }))).session_id).toBeNull();
  });
});

describe('a conversation of several traces', () => {
  it('each agent invocation its own trace, sharing gen_ai.conversation.id: one session of all their runs', async () => {
    const { key, project } = await setUpProject(app);
    const tracer = tracing('support-bot');
    const conversation = { 'gen_ai.conversation.id': 'conv-42', 'user.id': 'alice' };
    const start = Date.now() - 120_000;
    const traces = [
      tracer.record(agent('triage', [chat('gpt-4o', { 'gen_ai.usage.input_tokens': 10 })], conversation), start),
      tracer.record(
        agent('billing', [chat('gpt-4o', { 'gen_ai.usage.input_tokens': 20 })], conversation),
        start + 20_000,
      ),
      tracer.record(
        agent('triage', [chat('gpt-4o', { 'gen_ai.usage.input_tokens': 30 })], conversation),
        start + 40_000,
      ),
    ];
    const send = exporter(server.url, key).send;
    for (const recorded of traces) expect((await send(recorded.spans)).code).toBe(0);
    expect(new Set(traces.map((recorded) => recorded.traceId)).size).toBe(3);
    const res = await app.http.get(`/projects/${project.id}/agent/sessions/conv-42`).set(bearer(key));
    expect(res.status).toBe(200);
    expect(res.body.session).toMatchObject({
      session_id: 'conv-42',
      user_ids: ['alice'],
      agents: ['billing', 'triage'],
      total_runs: 3,
      completed_runs: 3,
      total_tokens: 60,
    });
    expect(res.body.runs.map((run: { id: string }) => run.id)).toEqual(
      traces.map((recorded) => runOf(recorded.spans.at(-1)!).id),
    );
    const list = await app.http.get(`/projects/${project.id}/agent/sessions`).set(bearer(key));
    expect(list.body.map((session: { session_id: string }) => session.session_id)).toEqual(['conv-42']);
  });
});
