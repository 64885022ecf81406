// OTLP export bodies for the benchmark: traces of one invoke_agent span and five GenAI children, protobuf-encoded with
// the official definitions (schema/otlp), as the service decodes them. A body is encoded once; each request gets fresh
// trace ids, written over the template's in place (ids are fixed-length bytes), so every request is new traces and
// never a re-export.
import { randomBytes } from 'node:crypto';
import { otlpMessages } from '../../src/otlp/decode';

export const SPANS_PER_TRACE = 6;

const text = (key: string, value: string) => ({ key, value: { stringValue: value } });
const int = (key: string, value: number) => ({ key, value: { intValue: value } });

function traceSpans(traceId: Buffer, startNanos: bigint) {
  const spanId = () => randomBytes(8);
  const agentId = spanId();
  const at = (ms: number) => String(startNanos + BigInt(ms) * 1_000_000n);
  const child = (i: number, name: string, attributes: unknown[]) => ({
    traceId,
    spanId: spanId(),
    parentSpanId: agentId,
    name,
    kind: 1,
    startTimeUnixNano: at(10 + i * 100),
    endTimeUnixNano: at(90 + i * 100),
    attributes,
  });
  const chat = (i: number) =>
    child(i, 'chat gpt-4o', [
      text('gen_ai.operation.name', 'chat'),
      text('gen_ai.request.model', 'gpt-4o'),
      text('gen_ai.response.model', 'gpt-4o-2024-08-06'),
      int('gen_ai.usage.input_tokens', 1200 + i),
      int('gen_ai.usage.output_tokens', 80 + i),
      text('gen_ai.output.messages', `[{"role":"assistant","parts":[{"type":"text","content":"step ${i}"}]}]`),
    ]);
  const tool = (i: number) =>
    child(i, 'execute_tool search', [
      text('gen_ai.operation.name', 'execute_tool'),
      text('gen_ai.tool.name', 'search'),
      text('gen_ai.tool.call.arguments', `{"q":"weather in paris, day ${i}"}`),
      text('gen_ai.tool.call.result', '{"forecast":"sunny"}'),
    ]);
  return [
    chat(0),
    tool(1),
    chat(2),
    tool(3),
    chat(4),
    {
      traceId,
      spanId: agentId,
      name: 'invoke_agent travel-planner',
      kind: 1,
      startTimeUnixNano: at(0),
      endTimeUnixNano: at(600),
      attributes: [
        text('gen_ai.operation.name', 'invoke_agent'),
        text('gen_ai.agent.name', 'travel-planner'),
        text('gen_ai.input.messages', '[{"role":"user","content":"plan a trip"}]'),
      ],
    },
  ];
}

/** An export of `traces` traces, and a way to make a copy of it with fresh trace ids. */
export function otlpExport(traces: number) {
  const { request } = otlpMessages();
  const traceIds = Array.from({ length: traces }, () => randomBytes(16));
  const startNanos = BigInt(Date.now() - 60_000) * 1_000_000n;
  const message = request.fromObject({
    resourceSpans: [
      {
        resource: { attributes: [text('service.name', 'bench-agents')] },
        scopeSpans: [{ scope: { name: 'bench' }, spans: traceIds.flatMap((id) => traceSpans(id, startNanos)) }],
      },
    ],
  });
  const template = Buffer.from(request.encode(message).finish());
  // Where each trace id sits in the body: every span of the trace carries it.
  const offsets = traceIds.map((id) => {
    const found: number[] = [];
    for (let at = template.indexOf(id); at !== -1; at = template.indexOf(id, at + 1)) found.push(at);
    if (found.length !== SPANS_PER_TRACE) throw new Error('a trace id is not where it was expected in the body');
    return found;
  });
  return {
    spans: traces * SPANS_PER_TRACE,
    template,
    /** The body with a fresh id for each trace. */
    fresh(): Buffer {
      const body = Buffer.from(template);
      for (const at of offsets) {
        const id = randomBytes(16);
        for (const offset of at) id.copy(body, offset);
      }
      return body;
    },
  };
}
