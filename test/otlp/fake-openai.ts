// A fake OpenAI-compatible model server on 127.0.0.1, for the tests of real instrumented clients: the model is the
// only thing faked. POST /v1/chat/completions answers a support question in two turns: first a call of the
// `lookup_order` tool, then, once the tool's result is in the conversation, the answer. Usage is in every answer.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export const FAKE_MODEL = 'gpt-4o-mini-2024-07-18';
/** The usage of the two turns, as the server reports it. */
export const TURNS = [
  { prompt_tokens: 120, completion_tokens: 20 },
  { prompt_tokens: 180, completion_tokens: 12 },
] as const;
export const TOOL_ARGUMENTS = '{"order":42}';
export const ANSWER = 'Order 42 has shipped; it arrives tomorrow.';

interface ChatRequest {
  messages: { role: string }[];
}

function completion(request: ChatRequest) {
  const answering = request.messages.some((message) => message.role === 'tool');
  const usage = TURNS[answering ? 1 : 0];
  const message = answering
    ? { role: 'assistant', content: ANSWER, refusal: null }
    : {
        role: 'assistant',
        content: null,
        refusal: null,
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'lookup_order', arguments: TOOL_ARGUMENTS } }],
      };
  return {
    id: `chatcmpl-${answering ? 2 : 1}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: FAKE_MODEL,
    choices: [{ index: 0, message, logprobs: null, finish_reason: answering ? 'stop' : 'tool_calls' }],
    usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
  };
}

export async function startFakeOpenAi(): Promise<{ baseUrl: string; requests: ChatRequest[]; close(): Promise<void> }> {
  const requests: ChatRequest[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"not found"}}');
        return;
      }
      const request = JSON.parse(body) as ChatRequest;
      requests.push(request);
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(completion(request)));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
