// An agent on the official OpenAI client under OpenTelemetry's own OpenAI instrumentation
// (@opentelemetry/instrumentation-openai): the instrumentation makes the `chat` spans of the model calls; the agent's
// run and its tool call are spans of the agent's own code, after the GenAI conventions (as examples/otel-agent.ts).
import { trace, type Attributes } from '@opentelemetry/api';
import { registerInstrumentations } from '@opentelemetry/instrumentation';
import { OpenAIInstrumentation } from '@opentelemetry/instrumentation-openai';
import { runToEnd, startTracing } from './tracing';
import { runSupportAgent, type AgentTracing } from './support-agent';

const provider = startTracing('otel-openai-agent');
registerInstrumentations({ instrumentations: [new OpenAIInstrumentation({ captureMessageContent: true })] });
// The instrumentation patches `openai` as it is loaded (a require hook): it is loaded once the hook is in place.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { OpenAI } = require('openai') as typeof import('openai');

const tracer = trace.getTracer('support-bot');
/** Runs `run` in a span; what it returns goes into the span's `resultKey` attribute, as `recorded` writes it. */
const inSpan = <T>(
  name: string,
  attributes: Attributes,
  run: () => Promise<T>,
  resultKey: string,
  recorded: (result: T) => string,
) =>
  tracer.startActiveSpan(name, { attributes }, async (span) => {
    try {
      const result = await run();
      span.setAttribute(resultKey, recorded(result));
      return result;
    } finally {
      span.end();
    }
  });

const tracing: AgentTracing = {
  agent: (name, input, run) =>
    inSpan(
      `invoke_agent ${name}`,
      {
        'gen_ai.operation.name': 'invoke_agent',
        'gen_ai.agent.name': name,
        'gen_ai.input.messages': JSON.stringify([{ role: 'user', parts: [{ type: 'text', content: input }] }]),
      },
      () => run(input),
      'gen_ai.output.messages',
      (output) => JSON.stringify([{ role: 'assistant', parts: [{ type: 'text', content: String(output) }] }]),
    ),
  tool: (name, args, run) =>
    inSpan(
      `execute_tool ${name}`,
      { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': name, 'gen_ai.tool.call.arguments': args },
      () => run(args),
      'gen_ai.tool.call.result',
      String,
    ),
};

runToEnd(
  () => runSupportAgent(new OpenAI(), tracing),
  () => provider.shutdown(),
);
