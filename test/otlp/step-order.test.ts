// The steps of a run made of spans (contract §8): in the spans' nanosecond start order, even within one millisecond
// and one microsecond, whatever order they end and arrive in; and spans that only group one iteration of an agent's
// loop (Vercel AI SDK's `agent_step`) are no steps, their children are. Spans built with the real OpenTelemetry SDK.
import { context, trace, type Attributes, type HrTime, type Span } from '@opentelemetry/api';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace-base';
import { getSteps } from '../ingest/run-helpers';
import { startTestApp, type TestApp } from '../support/app';
import { setUpProject } from '../support/fixtures';
import { exporter, listen, runOf, type Encoding } from './otel';

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

const memory = new InMemorySpanExporter();
const provider = new BasicTracerProvider({
  resource: resourceFromAttributes({ 'service.name': 'ordering' }),
  spanProcessors: [new SimpleSpanProcessor(memory)],
});
const tracer = provider.getTracer('step-order');
// Another instrumentation scope, as a model client's instrumentation has: exporters group spans by scope.
const instrumentationTracer = provider.getTracer('an-openai-instrumentation');

/** A minute ago, at the start of a whole second: spans are placed from it by nanoseconds. */
const baseSecond = () => Math.floor(Date.now() / 1000) - 60;
const at = (seconds: number, nanos: number): HrTime => [seconds, nanos];

function startSpan(name: string, attributes: Attributes, start: HrTime, parent?: Span, by = tracer): Span {
  const parentContext = parent ? trace.setSpan(context.active(), parent) : context.active();
  return by.startSpan(name, { attributes, startTime: start }, parentContext);
}

const agentAttributes = (name: string) => ({ 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': name });
const toolAttributes = (tool: string) => ({ 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': tool });
const chatAttributes = (model: string) => ({ 'gen_ai.operation.name': 'chat', 'gen_ai.request.model': model });

async function exportAndRead(spans: ReadableSpan[], agentSpan: ReadableSpan, encoding: Encoding) {
  const { key, project } = await setUpProject(app);
  expect(await exporter(server.url, key, encoding).send(spans)).toEqual({ code: 0 });
  const res = await getSteps(app, key, project.id, runOf(agentSpan).id, runOf(agentSpan).timestamp);
  expect(res.status).toBe(200);
  return res.body as { index: number; type: string; tool_name: string | null; model: string | null; name: string }[];
}

describe.each(['protobuf', 'json'] as const)('over OTLP/%s', (encoding) => {
  it('steps that start within one microsecond keep their nanosecond order, whatever order they end in', async () => {
    memory.reset();
    const second = baseSecond();
    const agent = startSpan('invoke_agent fan-out', agentAttributes('fan-out'), at(second, 0));
    // Three tools started in a loop, 100 ns apart, in parallel: the last one started ends first, and the exporter
    // sends spans as they end. Then a chat 1 µs and 100 ns later, in the same millisecond.
    const tools = ['first', 'second', 'third'].map((tool, i) =>
      startSpan(`execute_tool ${tool}`, toolAttributes(tool), at(second, 5_000_100 + i * 100), agent),
    );
    const chat = startSpan('chat gpt-4o', chatAttributes('gpt-4o'), at(second, 5_001_200), agent);
    chat.end(at(second, 9_000_000));
    tools.reverse().forEach((tool, i) => tool.end(at(second, 6_000_000 + i * 1000)));
    agent.end(at(second, 10_000_000));
    const spans = memory.getFinishedSpans();
    expect(spans.map((span) => span.name).slice(0, 2)).toEqual(['chat gpt-4o', 'execute_tool third']);

    const steps = await exportAndRead([...spans], spans.at(-1)!, encoding);
    expect(steps.map((step) => [step.index, step.tool_name ?? step.model])).toEqual([
      [0, 'first'],
      [1, 'second'],
      [2, 'third'],
      [3, 'gpt-4o'],
    ]);
  });

  it('steps that start at the same instant are in the order they ended, not the order they arrived in', async () => {
    memory.reset();
    const second = baseSecond();
    // OpenTelemetry JS takes a span's start from a millisecond clock and its end from a finer one: a tool call and
    // the model call after it start at the same millisecond. The model calls are another scope's spans, which the
    // exporter sends first: the second model call arrives before the tool call.
    const agent = startSpan('invoke_agent support', agentAttributes('support'), at(second, 0));
    const chat = (startNanos: number, endNanos: number) =>
      startSpan('chat gpt-4o', chatAttributes('gpt-4o'), at(second, startNanos), agent, instrumentationTracer).end(
        at(second, endNanos),
      );
    chat(1_000_000, 4_250_300);
    startSpan('execute_tool lookup', toolAttributes('lookup'), at(second, 5_000_000), agent).end(at(second, 5_000_400));
    chat(5_000_000, 9_600_800);
    agent.end(at(second, 10_000_000));
    const spans = memory.getFinishedSpans();

    const steps = await exportAndRead([...spans], spans.at(-1)!, encoding);
    expect(steps.map((step) => step.type)).toEqual(['llm', 'tool', 'llm']);
  });

  it("an agent_step span (Vercel AI SDK's iteration of its tool loop) is no step; the spans below it are", async () => {
    memory.reset();
    const second = baseSecond();
    const agent = startSpan('invoke_agent gpt-4o-mini', agentAttributes('weather'), at(second, 0));
    const iteration = (n: number, startNanos: number) =>
      startSpan(`step ${n}`, { 'gen_ai.operation.name': 'agent_step' }, at(second, startNanos), agent);
    const first = iteration(1, 1_000_000);
    startSpan('chat gpt-4o-mini', chatAttributes('gpt-4o-mini'), at(second, 1_000_500), first).end(
      at(second, 3_000_000),
    );
    startSpan('execute_tool weather', toolAttributes('weather'), at(second, 3_000_500), first).end(
      at(second, 4_000_000),
    );
    first.end(at(second, 4_000_100));
    const secondIteration = iteration(2, 4_000_200);
    startSpan('chat gpt-4o-mini', chatAttributes('gpt-4o-mini'), at(second, 4_000_300), secondIteration).end(
      at(second, 6_000_000),
    );
    secondIteration.end(at(second, 6_000_100));
    agent.end(at(second, 7_000_000));
    const spans = memory.getFinishedSpans();

    const steps = await exportAndRead([...spans], spans.at(-1)!, encoding);
    expect(steps.map((step) => [step.index, step.type, step.name])).toEqual([
      [0, 'llm', 'chat gpt-4o-mini'],
      [1, 'tool', 'execute_tool weather'],
      [2, 'llm', 'chat gpt-4o-mini'],
    ]);
  });
});
