// An agent instrumented with OpenTelemetry's GenAI semantic conventions, reporting to runwatch with no runwatch code:
//   OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:8080 OTEL_EXPORTER_OTLP_HEADERS="Authorization=Bearer rw_…" \
//     npx tsx examples/otel-agent.ts
import { context, trace } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';

// The exporter reads OTEL_EXPORTER_OTLP_ENDPOINT and OTEL_EXPORTER_OTLP_HEADERS, and posts to {endpoint}/v1/traces.
const provider = new BasicTracerProvider({
  resource: resourceFromAttributes({ 'service.name': 'support-bot' }),
  spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
});
const tracer = provider.getTracer('support-bot');
// Stands for the model's and the tool's work, which takes milliseconds to seconds. (OpenTelemetry JS stamps a span's
// start to the millisecond: steps that started within one are told apart by their ends.)
const work = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function main() {
  // The agent's run: an invoke_agent span. Its GenAI child spans become the run's steps.
  const question = 'Where is my order 42?';
  const agent = tracer.startSpan('invoke_agent support-bot', {
    attributes: {
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.name': 'support-bot',
      'gen_ai.input.messages': JSON.stringify([{ role: 'user', parts: [{ type: 'text', content: question }] }]),
    },
  });
  const inAgent = trace.setSpan(context.active(), agent);

  // A model call (an llm step): tokens are priced from the model's entry in runwatch's price table.
  const chat = tracer.startSpan(
    'chat gpt-4o-mini',
    { attributes: { 'gen_ai.operation.name': 'chat', 'gen_ai.request.model': 'gpt-4o-mini' } },
    inAgent,
  );
  await work(40);
  chat.setAttributes({
    'gen_ai.response.model': 'gpt-4o-mini-2024-07-18',
    'gen_ai.usage.input_tokens': 412,
    'gen_ai.usage.output_tokens': 38,
  });
  chat.end();

  // The tool the model asked for (a tool step): its arguments and result feed loop detection.
  const tool = tracer.startSpan(
    'execute_tool lookup_order',
    {
      attributes: {
        'gen_ai.operation.name': 'execute_tool',
        'gen_ai.tool.name': 'lookup_order',
        'gen_ai.tool.call.arguments': '{"order":42}',
      },
    },
    inAgent,
  );
  await work(5);
  tool.setAttribute('gen_ai.tool.call.result', '{"status":"shipped"}');
  tool.end();

  agent.setAttribute(
    'gen_ai.output.messages',
    JSON.stringify([{ role: 'assistant', parts: [{ type: 'text', content: 'It has shipped.' }] }]),
  );
  agent.end();
  // Exports what is still queued before the process exits.
  await provider.shutdown();
  console.log(`sent trace ${agent.spanContext().traceId}`);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
