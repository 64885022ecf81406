// The support agent of the instrumented-client tests, on the official OpenAI client: a question, the model asks for
// the `lookup_order` tool, the tool answers, the model answers. `tracing` says how the client's framework marks the
// agent's run and its tool call (the model calls are the instrumentation's).
import type OpenAI from 'openai';
import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';

/** How a framework wraps the agent's run and a tool call: it calls `run` with the input or arguments it records. */
export interface AgentTracing {
  agent<T>(name: string, input: string, run: (input: string) => Promise<T>): Promise<T>;
  tool<T>(name: string, args: string, run: (args: string) => Promise<T>): Promise<T>;
}

export const QUESTION = 'Where is my order 42?';
export const TOOL_RESULT = '{"status":"shipped","eta":"tomorrow"}';
const MODEL = 'gpt-4o-mini';
const TOOLS: ChatCompletionTool[] = [
  {
    type: 'function',
    function: {
      name: 'lookup_order',
      description: 'The status of an order',
      parameters: { type: 'object', properties: { order: { type: 'number' } }, required: ['order'] },
    },
  },
];

/** The tool: a fixed answer about order 42. */
async function lookUpOrder(args: string): Promise<string> {
  if ((JSON.parse(args) as { order: number }).order !== 42) throw new Error(`no such order: ${args}`);
  return TOOL_RESULT;
}

export function runSupportAgent(client: OpenAI, tracing: AgentTracing): Promise<string> {
  return tracing.agent('support-bot', QUESTION, async (question) => {
    const messages: ChatCompletionMessageParam[] = [{ role: 'user', content: question }];
    const first = await client.chat.completions.create({ model: MODEL, messages, tools: TOOLS });
    const call = first.choices[0].message.tool_calls![0];
    if (call.type !== 'function') throw new Error(`unexpected tool call ${call.type}`);
    const result = await tracing.tool(call.function.name, call.function.arguments, lookUpOrder);
    messages.push(first.choices[0].message, { role: 'tool', tool_call_id: call.id, content: result });
    const second = await client.chat.completions.create({ model: MODEL, messages, tools: TOOLS });
    return second.choices[0].message.content ?? '';
  });
}
