// An agent on Vercel's AI SDK 7 with its OpenTelemetry integration (@ai-sdk/otel) and the SDK's own mock model
// (`ai/test`) as the model: `generateText` with a tool, two iterations of its tool loop. The integration reports the
// run (`invoke_agent`), each iteration (`agent_step`), its model call (`chat`) and its tool call (`execute_tool`).
import { OpenTelemetry } from '@ai-sdk/otel';
import { generateText, registerTelemetry, stepCountIs, tool } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { z } from 'zod';
import { FAKE_MODEL, TOOL_ARGUMENTS, TURNS } from '../fake-openai.js';
import { QUESTION, TOOL_RESULT } from './support-agent.js';
import { runToEnd, startTracing } from './tracing.js';

const provider = startTracing('ai-sdk-agent');
registerTelemetry(new OpenTelemetry());

const usage = ({ prompt_tokens, completion_tokens }: (typeof TURNS)[number]) => ({
  inputTokens: { total: prompt_tokens, noCache: prompt_tokens, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: completion_tokens, text: completion_tokens, reasoning: 0 },
});
const model = new MockLanguageModelV4({
  provider: 'openai',
  modelId: FAKE_MODEL,
  doGenerate: [
    {
      content: [{ type: 'tool-call', toolCallId: 'call_1', toolName: 'lookup_order', input: TOOL_ARGUMENTS }],
      finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
      usage: usage(TURNS[0]),
      warnings: [],
    },
    {
      content: [{ type: 'text', text: 'Order 42 has shipped; it arrives tomorrow.' }],
      finishReason: { unified: 'stop', raw: 'stop' },
      usage: usage(TURNS[1]),
      warnings: [],
    },
  ],
});

runToEnd(
  () =>
    generateText({
      model,
      prompt: QUESTION,
      tools: {
        lookup_order: tool({
          description: 'The status of an order',
          inputSchema: z.object({ order: z.number() }),
          execute: async () => JSON.parse(TOOL_RESULT) as unknown,
        }),
      },
      stopWhen: stepCountIs(3),
      telemetry: { functionId: 'support-bot' },
    }),
  () => provider.shutdown(),
);
