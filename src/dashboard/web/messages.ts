// Chat messages in the texts runs and steps carry, read into one shape so that a conversation reads as one: the
// GenAI conventions' `gen_ai.input.messages` (role and parts), OpenAI's chat messages (and the request and response
// bodies OpenInference records), and the deprecated `gen_ai.prompt` list. Anything else is no conversation.

export interface MessagePart {
  kind: 'text' | 'tool_call' | 'tool_result';
  /** The text, the call's arguments or the result, as text. */
  text: string;
  /** The tool's name, for a call. */
  name?: string;
}

export interface Message {
  role: string;
  parts: MessagePart[];
}

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const asText = (value: unknown): string =>
  typeof value === 'string' ? value : value === undefined || value === null ? '' : JSON.stringify(value);

/** A GenAI convention part: `{ type: 'text', content }`, `{ type: 'tool_call', name, arguments }`, … */
function genAiPart(part: Json): MessagePart | undefined {
  switch (part.type) {
    case 'text':
    case 'reasoning':
      return { kind: 'text', text: asText(part.content) };
    case 'tool_call':
      return { kind: 'tool_call', name: asText(part.name), text: asText(part.arguments) };
    case 'tool_call_response':
      return { kind: 'tool_result', text: asText(part.response ?? part.result) };
    default:
      return undefined;
  }
}

/** OpenAI's `content`: a string, or parts of `{ type: 'text', text }`. */
function openAiContent(content: unknown): MessagePart[] {
  if (typeof content === 'string') return content ? [{ kind: 'text', text: content }] : [];
  if (!Array.isArray(content)) return [];
  return content.filter(isObject).map((part) => ({ kind: 'text' as const, text: asText(part.text ?? part.content) }));
}

function messageOf(value: unknown): Message | undefined {
  if (!isObject(value) || typeof value.role !== 'string') return undefined;
  if (Array.isArray(value.parts)) {
    const parts = value.parts.filter(isObject).map(genAiPart);
    return parts.every((part) => part !== undefined) ? { role: value.role, parts } : undefined;
  }
  const parts = openAiContent(value.content);
  for (const call of Array.isArray(value.tool_calls) ? value.tool_calls.filter(isObject) : []) {
    const fn = isObject(call.function) ? call.function : {};
    parts.push({ kind: 'tool_call', name: asText(fn.name), text: asText(fn.arguments) });
  }
  // A tool's answer in OpenAI's shape is a message of role `tool`: its content is the result.
  if (value.role === 'tool') return { role: 'tool', parts: parts.map((part) => ({ ...part, kind: 'tool_result' })) };
  return { role: value.role, parts };
}

/** The messages of a list, or undefined when one of its items is not a message. */
function messagesOf(list: unknown): Message[] | undefined {
  if (!Array.isArray(list) || list.length === 0) return undefined;
  const messages = list.map(messageOf);
  return messages.every((message) => message !== undefined) ? messages : undefined;
}

/** The conversation a text holds, or undefined when it holds none (plain text, other JSON). */
export function conversationOf(text: string): Message[] | undefined {
  const trimmed = text.trim();
  if (!trimmed.startsWith('[') && !trimmed.startsWith('{')) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(trimmed);
  } catch {
    return undefined;
  }
  if (Array.isArray(parsed)) return messagesOf(parsed);
  if (!isObject(parsed)) return undefined;
  // An OpenAI request body (what OpenInference records as an LLM span's input)…
  if (Array.isArray(parsed.messages)) return messagesOf(parsed.messages);
  // …and a response body, its output.
  if (Array.isArray(parsed.choices)) return messagesOf(parsed.choices.filter(isObject).map((choice) => choice.message));
  return undefined;
}

/** What a text says in a line: the first user message's text when it is a conversation, else the text itself. */
export function previewOf(text: string): string {
  const conversation = conversationOf(text);
  if (!conversation) return text;
  const message = conversation.find((candidate) => candidate.role === 'user') ?? conversation[0];
  return message.parts.map((part) => (part.kind === 'tool_call' ? `${part.name}(${part.text})` : part.text)).join(' ');
}
