// OpenTelemetry ingest (contract §8) with the real OpenTelemetry SDK as the client, through the real server.
import { gzipSync } from 'node:zlib';
import { loadPriceTable } from '../../src/pricing/prices';
import { alertProject } from '../alerts/helpers';
import { finishedRowCount, getRun, getSteps, listRuns } from '../ingest/run-helpers';
import { startTestApp, type TestApp } from '../support/app';
import { setUpProject } from '../support/fixtures';
import { agent, chat, exporter, listen, plain, runOf, toolCall, tracing, type Encoding, type SpanSpec } from './otel';

// A late span's flush carries a lightweight DELETE of its run's replaced row, which waits for the engine's merges of
// the parts it touches: past the default 30 s once on CI's loaded machine, where a read waits up to READ_FLUSH_WAIT_MS
// (60 s in tests, test/support/app.ts) for that flush.
jest.setTimeout(90_000);

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

const tracer = tracing('support-bot');
const prices = loadPriceTable();

async function project() {
  const {
    key,
    project: { id },
  } = await setUpProject(app);
  const read = async (run: { id: string; timestamp: string }) => {
    const res = await getRun(app, key, id, run.id, run.timestamp);
    return { status: res.status, run: res.body as Record<string, unknown> };
  };
  const steps = async (run: { id: string; timestamp: string }) => {
    const res = await getSteps(app, key, id, run.id, run.timestamp);
    expect(res.status).toBe(200);
    return res.body as Record<string, unknown>[];
  };
  return {
    key,
    projectId: id,
    read,
    steps,
    list: () => listRuns(app, key, id),
    send: (encoding: Encoding = 'protobuf', gzip = false) => exporter(server.url, key, encoding, gzip).send,
  };
}

const supportTrace = (): SpanSpec =>
  agent(
    'support-bot',
    [
      chat('gpt-4o-2024-08-06', {
        'gen_ai.usage.input_tokens': 1200,
        'gen_ai.usage.output_tokens': 300,
        'gen_ai.output.messages': '[{"role":"assistant"}]',
      }),
      toolCall('search_orders', '{"order":42}', '{"status":"shipped"}'),
      chat('gpt-4o-2024-08-06', { 'gen_ai.usage.input_tokens': 1500, 'gen_ai.usage.output_tokens': 80 }),
    ],
    { 'gen_ai.input.messages': '[{"role":"user","content":"where is my order?"}]' },
  );

describe('spans become runs and steps', () => {
  it.each([
    ['protobuf', false],
    ['json', false],
    ['protobuf', true],
    ['json', true],
  ] as const)('%s (gzip: %s)', async (encoding, gzip) => {
    const p = await project();
    const recorded = tracer.record(supportTrace());
    expect(await p.send(encoding, gzip)(recorded.spans)).toEqual({ code: 0 });

    const run = runOf(recorded.span('invoke_agent support-bot'));
    const { status, run: body } = await p.read(run);
    expect(status).toBe(200);
    const gpt4o = (input: number, output: number) =>
      prices.costOf('gpt-4o', { inputTokens: input, outputTokens: output });
    expect(body).toMatchObject({
      id: run.id,
      timestamp: run.timestamp,
      agent_name: 'support-bot',
      status: 'completed',
      total_steps: 3,
      total_tokens: 3080,
      input: '[{"role":"user","content":"where is my order?"}]',
      termination_reason: 'completed',
      loop_detected: false,
    });
    expect(body.total_cost_usd).toBeCloseTo(gpt4o(1200, 300) + gpt4o(1500, 80), 12);
    expect(gpt4o(1200, 300)).toBeGreaterThan(0);
    const steps = await p.steps(run);
    expect(steps.map((step) => [step.index, step.type, step.tool_name, step.model])).toEqual([
      [0, 'llm', null, 'gpt-4o-2024-08-06'],
      [1, 'tool', 'search_orders', null],
      [2, 'llm', null, 'gpt-4o-2024-08-06'],
    ]);
    expect(steps[0]).toMatchObject({
      input_tokens: 1200,
      output_tokens: 300,
      tokens: 1500,
      output: '[{"role":"assistant"}]',
      duration_ms: 10,
    });
    expect(steps[1]).toMatchObject({ input: '{"order":42}', output: '{"status":"shipped"}', cost_usd: null });
    expect((await p.list()).total).toBe(1);
  });
});

it('children exported before their parent, in separate requests, join its run once it arrives', async () => {
  const p = await project();
  const recorded = tracer.record(supportTrace());
  const [first, second, third, parent] = recorded.spans;
  const send = p.send();
  expect(await send([first])).toEqual({ code: 0 });
  expect(await send([second, third])).toEqual({ code: 0 });
  expect((await p.list()).total).toBe(0);
  expect(await send([parent])).toEqual({ code: 0 });
  const run = runOf(parent);
  expect((await p.read(run)).run).toMatchObject({ total_steps: 3, total_tokens: 3080 });
  expect((await p.list()).total).toBe(1);
});

it('a re-export creates nothing new', async () => {
  const p = await project();
  const recorded = tracer.record(supportTrace());
  const send = p.send();
  expect(await send(recorded.spans)).toEqual({ code: 0 });
  expect(await send(recorded.spans)).toEqual({ code: 0 });
  expect(await p.send('json')(recorded.spans.slice(1))).toEqual({ code: 0 });
  const run = runOf(recorded.span('invoke_agent support-bot'));
  expect((await p.list()).total).toBe(1);
  expect(await finishedRowCount(app, p.projectId, run.id)).toBe(1);
  expect((await p.steps(run)).length).toBe(3);
});

it('a child arriving after its run was stored is added to it; the run still counts once', async () => {
  const p = await project();
  const recorded = tracer.record(supportTrace());
  const late = recorded.span('execute_tool search_orders');
  const send = p.send();
  expect(await send(recorded.spans.filter((span) => span !== late))).toEqual({ code: 0 });
  const run = runOf(recorded.span('invoke_agent support-bot'));
  expect((await p.read(run)).run).toMatchObject({ total_steps: 2 });
  expect(await send([late])).toEqual({ code: 0 });
  expect((await p.read(run)).run).toMatchObject({ total_steps: 3, total_tokens: 3080 });
  expect((await p.steps(run)).map((step) => step.type)).toEqual(['llm', 'tool', 'llm']);
  expect(await finishedRowCount(app, p.projectId, run.id)).toBe(1);
  const { total, runs } = await p.list();
  expect(total).toBe(1);
  expect(runs[0]).toMatchObject({ id: run.id, total_steps: 3 });
});

it("a late step that starts before a detected loop moves the loop's index with its step", async () => {
  const p = await project();
  const recorded = tracer.record(
    agent('looper', [
      chat('gpt-4o-mini'),
      ...Array.from({ length: 4 }, () => toolCall('search', '{"q":"same"}', 'nothing')),
    ]),
  );
  const early = recorded.span('chat gpt-4o-mini');
  const send = p.send();
  expect(await send(recorded.spans.filter((span) => span !== early))).toEqual({ code: 0 });
  const run = runOf(recorded.span('invoke_agent looper'));
  expect((await p.read(run)).run).toMatchObject({ loop_detected: true, loop_step_index: 0 });
  expect(await send([early])).toEqual({ code: 0 });
  expect((await p.read(run)).run).toMatchObject({ loop_detected: true, loop_step_index: 1, total_steps: 5 });
});

it('ERROR agent span: a failed run, termination detail from its message; a failed tool step: its error', async () => {
  const p = await project();
  const recorded = tracer.record({
    ...agent('billing', [{ ...toolCall('charge', '{}', ''), error: 'card declined' }]),
    error: 'gave up after the charge failed',
  });
  expect(await p.send()(recorded.spans)).toEqual({ code: 0 });
  const run = runOf(recorded.span('invoke_agent billing'));
  expect((await p.read(run)).run).toMatchObject({
    status: 'failed',
    termination_reason: 'error',
    termination_detail: 'gave up after the charge failed',
  });
  expect((await p.steps(run))[0]).toMatchObject({ type: 'tool', error: 'card declined' });
});

it('a loop of identical tool spans is detected and fires a per_run loop_detected alert', async () => {
  const p = await alertProject(app);
  const rule = await p.rule({
    class: 'per_run',
    signal: 'loop_detected',
    comparator: undefined,
    threshold: undefined,
    min_requests: 0,
    window_seconds: 0,
    cooldown_seconds: 0,
  });
  const recorded = tracer.record(
    agent(
      'looper',
      Array.from({ length: 4 }, () => toolCall('search', '{"q":"same"}', 'nothing')),
    ),
  );
  expect(await exporter(server.url, p.key).send(recorded.spans)).toEqual({ code: 0 });
  const run = runOf(recorded.span('invoke_agent looper'));
  const res = await getRun(app, p.key, p.project.id, run.id, run.timestamp);
  expect(res.body).toMatchObject({ loop_detected: true, loop_step_index: 0 });
  await app.alerts.idle();
  expect(await p.eventList(rule.id)).toMatchObject([{ run_id: run.id, reason: 'loop_detected' }]);
});

it('a nested agent is its own run and an `other` step of its parent; plain spans between pass through', async () => {
  const p = await project();
  const recorded = tracer.record(
    agent('planner', [
      chat('gpt-4o-mini'),
      plain('graph node', [
        agent('researcher', [plain('http GET', [toolCall('fetch', '{"url":"a"}', 'page')]), chat('gpt-4o-mini')]),
      ]),
    ]),
  );
  expect(await p.send()(recorded.spans)).toEqual({ code: 0 });
  const planner = runOf(recorded.span('invoke_agent planner'));
  const researcher = runOf(recorded.span('invoke_agent researcher'));
  expect((await p.steps(planner)).map((step) => [step.type, step.name])).toEqual([
    ['llm', 'chat gpt-4o-mini'],
    ['other', 'invoke_agent researcher'],
  ]);
  expect((await p.steps(researcher)).map((step) => [step.type, step.name])).toEqual([
    ['tool', 'execute_tool fetch'],
    ['llm', 'chat gpt-4o-mini'],
  ]);
  expect((await p.read(researcher)).run).toMatchObject({ agent_name: 'researcher', total_steps: 2 });
  expect((await p.list()).total).toBe(2);
});

it('a nested agent exported with its child before the outer agent becomes a step of it when it arrives', async () => {
  const p = await project();
  const recorded = tracer.record(agent('planner', [agent('researcher', [chat('gpt-4o-mini')])]));
  const outer = recorded.span('invoke_agent planner');
  const send = p.send();
  expect(await send(recorded.spans.filter((span) => span !== outer))).toEqual({ code: 0 });
  expect(await send([outer])).toEqual({ code: 0 });
  expect((await p.steps(runOf(outer))).map((step) => [step.type, step.name])).toEqual([
    ['other', 'invoke_agent researcher'],
  ]);
  expect((await p.steps(runOf(recorded.span('invoke_agent researcher')))).map((step) => step.type)).toEqual(['llm']);
});

it("OpenInference spans (Phoenix's) map too: AGENT runs; LLM, TOOL, RETRIEVER steps through CHAIN spans", async () => {
  const p = await project();
  const kind = (value: string, attributes: Record<string, string | number> = {}) => ({
    'openinference.span.kind': value,
    ...attributes,
  });
  const recorded = tracer.record({
    name: 'research',
    attributes: kind('AGENT', { 'agent.name': 'researcher', 'input.value': 'find papers' }),
    children: [
      {
        name: 'graph node',
        attributes: kind('CHAIN'),
        children: [
          {
            name: 'ChatOpenAI',
            attributes: kind('LLM', {
              'llm.model_name': 'gpt-4o-mini',
              'llm.token_count.prompt': 100,
              'llm.token_count.completion': 20,
            }),
          },
          {
            name: 'search',
            attributes: kind('TOOL', {
              'tool.name': 'search',
              'input.value': '{"q":"otel"}',
              'output.value': '3 hits',
            }),
          },
          { name: 'vector store', attributes: kind('RETRIEVER', { 'output.value': 'docs' }) },
        ],
      },
    ],
  });
  expect(await p.send()(recorded.spans)).toEqual({ code: 0 });
  const run = runOf(recorded.span('research'));
  expect((await p.read(run)).run).toMatchObject({
    agent_name: 'researcher',
    input: 'find papers',
    total_steps: 3,
    total_tokens: 120,
  });
  const steps = await p.steps(run);
  expect(steps.map((step) => [step.type, step.model ?? step.tool_name, step.input_tokens])).toEqual([
    ['llm', 'gpt-4o-mini', 100],
    ['tool', 'search', null],
    ['retrieval', null, null],
  ]);
  expect(steps[0].cost_usd).toBeCloseTo(prices.costOf('gpt-4o-mini', { inputTokens: 100, outputTokens: 20 }), 12);
  expect(steps[1]).toMatchObject({ input: '{"q":"otel"}', output: '3 hits' });
});

it('spans without GenAI attributes are ignored; a GenAI span with no agent above it is a run of one step', async () => {
  const p = await project();
  const web = tracer.record(plain('GET /health', [plain('SELECT 1')]));
  const chatApp = tracer.record(
    plain('POST /chat', [chat('gpt-4o-mini', { 'gen_ai.usage.input_tokens': 10, 'gen_ai.usage.output_tokens': 5 })]),
  );
  expect(await p.send()([...web.spans, ...chatApp.spans])).toEqual({ code: 0 });
  const { total, runs } = await p.list();
  expect(total).toBe(1);
  const call = runOf(chatApp.span('chat gpt-4o-mini'));
  expect(runs[0]).toMatchObject({
    id: call.id,
    agent_name: 'support-bot',
    status: 'completed',
    total_steps: 1,
    total_tokens: 15,
  });
});

it('deprecated token names count; an unknown model costs 0; a cost the client sends wins', async () => {
  const p = await project();
  const recorded = tracer.record(
    agent('pricing', [
      chat('gpt-4o', { 'gen_ai.usage.prompt_tokens': 1000, 'gen_ai.usage.completion_tokens': 100 }),
      chat('my-local-llm', { 'gen_ai.usage.input_tokens': 1000, 'gen_ai.usage.output_tokens': 100 }),
      chat('gpt-4o', {
        'gen_ai.usage.input_tokens': 1000,
        'gen_ai.usage.output_tokens': 100,
        'gen_ai.usage.cost': 0.5,
      }),
    ]),
  );
  expect(await p.send('json')(recorded.spans)).toEqual({ code: 0 });
  const steps = await p.steps(runOf(recorded.span('invoke_agent pricing')));
  expect(steps.map((step) => [step.input_tokens, step.output_tokens, step.tokens])).toEqual([
    [1000, 100, 1100],
    [1000, 100, 1100],
    [1000, 100, 1100],
  ]);
  expect(steps[0].cost_usd).toBeCloseTo(prices.costOf('gpt-4o', { inputTokens: 1000, outputTokens: 100 }), 12);
  expect(steps[1].cost_usd).toBe(0);
  expect(steps[2].cost_usd).toBe(0.5);
});

describe('answers', () => {
  const span = (fields: Record<string, unknown>) => ({
    traceId: '5b8efff798038103d269b633813fc60c',
    spanId: 'eee19b7ec3c1b174',
    name: 'chat',
    startTimeUnixNano: String(BigInt(Date.now() - 1000) * 1_000_000n),
    endTimeUnixNano: String(BigInt(Date.now()) * 1_000_000n),
    attributes: [{ key: 'gen_ai.operation.name', value: { stringValue: 'chat' } }],
    ...fields,
  });
  const body = (...spans: unknown[]) => ({
    resourceSpans: [{ resource: { attributes: [] }, scopeSpans: [{ spans }] }],
  });
  const post = (key: string, type = 'application/json') =>
    app.http.post('/v1/traces').set('Authorization', `Bearer ${key}`).set('Content-Type', type);

  it('200 with partialSuccess when some spans cannot be mapped; the others are stored', async () => {
    const p = await project();
    const res = await post(p.key).send(
      body(span({ spanId: '1111111111111111', endTimeUnixNano: '1' }), span({ spanId: 'zz' }), span({})),
    );
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      partialSuccess: { rejectedSpans: '2', errorMessage: expect.stringContaining('cannot end before it starts') },
    });
    expect((await p.list()).total).toBe(1);
  });

  it('names cut at the limit keep whole characters; attributes not AnyValues, or too deep, are ignored', async () => {
    const p = await project();
    const agentSpan = span({
      spanId: '2222222222222222',
      name: 'invoke_agent x',
      attributes: [
        { key: 'gen_ai.operation.name', value: { stringValue: 'invoke_agent' } },
        { key: 'gen_ai.agent.name', value: { stringValue: `${'a'.repeat(199)}😀` } },
        { key: 'odd', value: { value: 'arrayValue' } },
        { key: 7 },
        { key: 'deep', value: 'DEEP' },
      ],
    });
    // Nested 20,000 levels deep, written out as text: no JSON library on either side walks it recursively.
    const levels = 20_000;
    const deep = `${'{"arrayValue":{"values":['.repeat(levels)}{"stringValue":"leaf"}${']}}'.repeat(levels)}`;
    const res = await post(p.key).send(JSON.stringify(body(agentSpan)).replace('"DEEP"', deep));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({});
    const { runs } = await p.list();
    expect(runs.map((run) => run.agent_name)).toEqual(['a'.repeat(199)]);
  });

  it('times as JSON numbers (past 2^53 nanoseconds) are taken', async () => {
    const p = await project();
    const now = Date.now();
    const res = await post(p.key).send(
      body(span({ startTimeUnixNano: (now - 1000) * 1e6, endTimeUnixNano: now * 1e6 })),
    );
    expect([res.status, res.body]).toEqual([200, {}]);
    expect((await p.list()).runs).toMatchObject([{ duration_ms: 1000 }]);
  });

  it('400 for a body that does not decode, 401 for a bad key, 415 for another media type', async () => {
    const p = await project();
    expect((await post(p.key, 'application/x-protobuf').send(Buffer.from([0x0a, 0xff, 0xff, 0xff]))).status).toBe(400);
    expect((await post(p.key).send('{"resourceSpans": [')).body.error.code).toBe('malformed_json');
    expect((await post(p.key).send({ resourceSpans: 'many' })).body.error).toMatchObject({ code: 'validation_failed' });
    const bad = await post('rw_notakey').send(body(span({})));
    expect(bad.status).toBe(401);
    expect(bad.body.error.code).toBe('unauthenticated');
    // The caller is known before a body is decoded: a bad key with a bad body is a 401 as well.
    expect((await post('rw_notakey').send({ resourceSpans: 'many' })).status).toBe(401);
    expect((await post(p.key, 'text/plain').send('hello')).status).toBe(415);
  });

  it('a gzip body is decompressed; 413 over the ingest body limit, measured decompressed', async () => {
    const p = await project();
    // Through fetch: supertest would encode a Buffer sent as application/json as JSON.
    const postGzipped = (value: unknown) =>
      fetch(`${server.url}/v1/traces`, {
        method: 'POST',
        body: gzipSync(JSON.stringify(value)),
        headers: { Authorization: `Bearer ${p.key}`, 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' },
      });
    const ok = await postGzipped(body(span({})));
    expect([ok.status, await ok.json()]).toEqual([200, {}]);
    const huge = await postGzipped(body(span({ name: 'x'.repeat(app.config.ingestBodyLimitBytes) })));
    expect(huge.status).toBe(413);
    expect(((await huge.json()) as { error: { code: string } }).error.code).toBe('payload_too_large');
  });

  it('the protobuf answer is an ExportTraceServiceResponse', async () => {
    const p = await project();
    const res = await post(p.key, 'application/x-protobuf').send(Buffer.alloc(0));
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/x-protobuf/);
  });
});
