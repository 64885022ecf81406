// The GenAI semantic conventions (current and deprecated names, OpenLLMetry's, and OpenInference's) mapped onto runs
// and steps (contract §8): each span of an export becomes what the trace's assembly keeps of it, or is ignored or
// rejected.
import { createHash } from 'node:crypto';
import { hasLoneSurrogate } from '../http/schemas';
import { formatUuid } from '../ids';
import type { StepFields } from '../ingest/derive';
import type { OtlpSpan } from './decode';

/** What an invoke_agent span says of its run. */
export interface AgentFields {
  agent_name: string;
  input: string;
  output: string;
  /** The status message or error.type of an ERROR span; null when the span did not fail. */
  error: string | null;
}

/**
 * What a span says of its run's session, user and tags (contract §10): each only when the span (or its resource)
 * carries it. A run takes them from its agent span, else from the first of its steps that has them (service.ts).
 */
export interface SpanLabels {
  session_id?: string;
  user_id?: string;
  tags?: string[];
}

/**
 * A span as its trace's assembly keeps it. `agent`: an invoke_agent span, a run of its own and an `other` step of
 * its parent agent's run; `step`: another GenAI span; `link`: a span without GenAI attributes, kept only for its
 * place between GenAI spans and their agent. `step` and `agent` data are dropped once the span is placed in a run.
 */
export interface TraceSpan {
  spanId: string;
  parentSpanId: string;
  role: 'agent' | 'step' | 'link';
  /** The start to the microsecond; the end likewise. */
  startMs: number;
  /**
   * The start's nanoseconds past its whole millisecond (0–999,999): what orders the steps that start within one
   * millisecond (contract §8), which `startMs` alone could not tell apart within one microsecond.
   */
  startNs: number;
  endMs: number;
  /** The resource's service.name: the agent name of runs made of GenAI spans with no agent above them. */
  service: string;
  step?: Omit<StepFields, 'index'>;
  agent?: AgentFields;
  labels?: SpanLabels;
}

export type MappedSpan = { traceId: string; span: TraceSpan; genAi: boolean } | { rejected: string };

/** A GenAI span that cannot become a run or a step: it is counted in the export's partialSuccess. */
class UnmappableSpan extends Error {}

const MiB = 1024 * 1024;
const LLM_OPERATIONS = new Set(['chat', 'text_completion', 'generate_content', 'embeddings']);
const ERROR_STATUS = new Set([2, 'STATUS_CODE_ERROR']);
const HEX_ID = { trace: /^[0-9a-f]{32}$/, span: /^[0-9a-f]{16}$/ };
const ZERO_TRACE_ID = '0'.repeat(32);
const ZERO_SPAN_ID = '0'.repeat(16);

/** A 64-bit integer: a number or decimal string (OTLP/JSON), or protobufjs's Long. */
function int64(value: unknown): number {
  if (typeof value === 'object' && value !== null) {
    const { low, high } = value as { low: number; high: number };
    return high * 4294967296 + (low >>> 0);
  }
  return Number(value);
}

/** Deeper arrays and maps than this are not read (an attribute is no place for a deep document). */
const MAX_VALUE_DEPTH = 16;

const objectOrEmpty = (value: unknown): Record<string, unknown> =>
  typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};

/**
 * An AnyValue as plain JSON: strings, numbers and booleans as themselves, arrays and maps as JSON values; undefined
 * for anything else. It reads OTLP/JSON's objects and protobufjs's messages alike: a message names its set field in
 * `value` (its other fields are its prototype's defaults), a JSON object has that field as its own.
 */
function plain(anyValue: unknown, depth = 0): unknown {
  if (anyValue === null || typeof anyValue !== 'object' || depth > MAX_VALUE_DEPTH) return undefined;
  const any = anyValue as Record<string, unknown>;
  const field = typeof any.value === 'string' ? any.value : ANY_VALUE_FIELDS.find((name) => Object.hasOwn(any, name));
  const value = field === undefined ? undefined : any[field];
  switch (field) {
    case 'stringValue':
      return typeof value === 'string' ? value : undefined;
    case 'boolValue':
      return typeof value === 'boolean' ? value : undefined;
    case 'intValue':
    case 'doubleValue':
      return int64(value);
    case 'arrayValue':
      return arrayOf(objectOrEmpty(value).values).map((item) => plain(item, depth + 1));
    case 'kvlistValue':
      return Object.fromEntries(attributesOf(objectOrEmpty(value).values, depth + 1));
    default:
      return undefined;
  }
}

const ANY_VALUE_FIELDS = [
  'stringValue',
  'boolValue',
  'intValue',
  'doubleValue',
  'arrayValue',
  'kvlistValue',
  'bytesValue',
];
const arrayOf = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);

/** Attributes by key, each as plain JSON; an entry that is no KeyValue is skipped. */
function attributesOf(keyValues: unknown, depth = 0): Map<string, unknown> {
  const attributes = new Map<string, unknown>();
  for (const keyValue of arrayOf(keyValues)) {
    const { key, value } = objectOrEmpty(keyValue);
    if (typeof key === 'string') attributes.set(key, plain(value, depth));
  }
  return attributes;
}

/** Text cut to `limit` UTF-16 units, never between the two halves of a character. */
function cut(text: string, limit: number): string {
  if (text.length <= limit) return text;
  const end = /[\uD800-\uDBFF]/.test(text[limit - 1]) ? limit - 1 : limit;
  return text.slice(0, end);
}

/** Text kept from an attribute; JSON values as JSON. Undefined for none, and for text no store can hold. */
const asText = (value: unknown, limit = MiB): string | undefined => {
  if (value === undefined || value === null) return undefined;
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  // A lone UTF-16 surrogate (OTLP/JSON may escape one) is no character: ClickHouse would refuse the row.
  if (hasLoneSurrogate(text)) throw new UnmappableSpan('text with a lone UTF-16 surrogate');
  // Texts over the ingest limit are cut rather than the span refused: the run counts more than the end of a prompt.
  return cut(text, limit);
};
const asCount = (value: unknown): number | undefined =>
  typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : undefined;

/** The first of several attribute names (the current one, then deprecated ones) that is set. */
const first = (attributes: Map<string, unknown>, ...names: string[]) => {
  for (const name of names) if (attributes.get(name) !== undefined) return attributes.get(name);
  return undefined;
};

/**
 * Nanoseconds since the epoch (a decimal string or a number) in milliseconds, to the microsecond: steps that start
 * within the same millisecond keep their order. Stored times are truncated to the millisecond.
 */
function millisecondsOf(nanos: string | number | undefined): number | undefined {
  if (nanos === undefined) return undefined;
  const text = typeof nanos === 'number' ? BigInt(Math.trunc(nanos)).toString() : nanos;
  return text.length <= 3 ? 0 : Number(text.slice(0, -3)) / 1000;
}

/** Nanoseconds since the epoch, as `millisecondsOf` reads them: the nanoseconds past their whole millisecond. */
function nanosecondsPastMillisecond(nanos: string | number | undefined): number {
  if (nanos === undefined) return 0;
  const text = typeof nanos === 'number' ? BigInt(Math.trunc(nanos)).toString() : nanos;
  return Number(text.slice(-6)) || 0;
}

/** A run's id, derived from its span's trace and span ids: a re-exported span is the same run. */
export function runIdOf(traceId: string, spanId: string): string {
  const bytes = createHash('sha256').update(`${traceId}:${spanId}`).digest().subarray(0, 16);
  // An RFC 9562 version 8 UUID (custom: derived, not random).
  return formatUuid(bytes, 8);
}

// OpenInference's span kinds (Phoenix, and the instrumentations Arize publishes for LangChain/LangGraph, LlamaIndex,
// the OpenAI Agents SDK…) as steps; CHAIN and PROMPT spans are the plumbing between them, read as plain spans.
const OPENINFERENCE_STEPS: Record<string, StepFields['type']> = {
  LLM: 'llm',
  EMBEDDING: 'llm',
  TOOL: 'tool',
  RETRIEVER: 'retrieval',
  RERANKER: 'other',
  GUARDRAIL: 'other',
  EVALUATOR: 'other',
};
const openInferenceKind = (attributes: Map<string, unknown>) => attributes.get('openinference.span.kind');

/**
 * A span that only groups one iteration of the agent's own loop (Vercel AI SDK's `agent_step`, "step 1", "step 2"…):
 * no step of its own, kept for its place between its model and tool calls and their agent, as a plain span is.
 */
const isLoopIteration = (attributes: Map<string, unknown>) => attributes.get('gen_ai.operation.name') === 'agent_step';

const isAgentSpan = (attributes: Map<string, unknown>) =>
  attributes.get('gen_ai.operation.name') === 'invoke_agent' ||
  attributes.get('traceloop.span.kind') === 'agent' ||
  openInferenceKind(attributes) === 'AGENT';

function stepTypeOf(attributes: Map<string, unknown>): StepFields['type'] {
  const operation = attributes.get('gen_ai.operation.name');
  if (operation === 'execute_tool' || attributes.get('traceloop.span.kind') === 'tool') return 'tool';
  if (typeof operation === 'string') return LLM_OPERATIONS.has(operation) ? 'llm' : 'other';
  const kind = openInferenceKind(attributes);
  if (typeof kind === 'string' && Object.hasOwn(OPENINFERENCE_STEPS, kind)) return OPENINFERENCE_STEPS[kind];
  // Instrumentations older than gen_ai.operation.name (OpenLLMetry's llm.request.type) mark model calls otherwise.
  return attributes.has('llm.request.type') || attributes.has('gen_ai.request.model') ? 'llm' : 'other';
}

function stepOf(
  span: OtlpSpan,
  attributes: Map<string, unknown>,
  error: string | null,
  startMs: number,
  endMs: number,
): Omit<StepFields, 'index'> {
  const type = stepTypeOf(attributes);
  const name = asText(span.name ?? '', 1000) ?? '';
  const started_at = new Date(startMs);
  const duration_ms = Math.floor(endMs) - Math.floor(startMs);
  // Each kind of step is one whole object literal, its kind's own field (the tool, the model) first: built up
  // property by property or by a spread, the steps left V8's fast in-object shapes, and mapping them in the worker
  // and sending them to the event loop cost OTLP ingest a quarter of its spans/s (bench:ingest, CPU profiles).
  if (type === 'tool') {
    return {
      type,
      tool_name:
        asText(first(attributes, 'gen_ai.tool.name', 'traceloop.entity.name', 'tool.name'), 1000) ||
        name.replace(/^execute_tool /, ''),
      name,
      started_at,
      duration_ms,
      error,
      input: asText(first(attributes, 'gen_ai.tool.call.arguments', 'traceloop.entity.input', 'input.value')),
      output: asText(first(attributes, 'gen_ai.tool.call.result', 'traceloop.entity.output', 'output.value')),
    };
  }
  const cost = first(attributes, 'gen_ai.usage.cost', 'llm.cost.total');
  return {
    type,
    model: asText(
      first(attributes, 'gen_ai.response.model', 'gen_ai.request.model', 'llm.model_name', 'embedding.model_name'),
      1000,
    ),
    name,
    started_at,
    duration_ms,
    error,
    input_tokens: asCount(
      first(attributes, 'gen_ai.usage.input_tokens', 'gen_ai.usage.prompt_tokens', 'llm.token_count.prompt'),
    ),
    output_tokens: asCount(
      first(attributes, 'gen_ai.usage.output_tokens', 'gen_ai.usage.completion_tokens', 'llm.token_count.completion'),
    ),
    cached_input_tokens: asCount(
      first(
        attributes,
        'gen_ai.usage.cache_read.input_tokens',
        'gen_ai.usage.cache_read_input_tokens',
        'llm.token_count.prompt_details.cache_read',
      ),
    ),
    input: asText(first(attributes, 'gen_ai.input.messages', 'gen_ai.prompt', 'traceloop.entity.input', 'input.value')),
    output: asText(
      first(attributes, 'gen_ai.output.messages', 'gen_ai.completion', 'traceloop.entity.output', 'output.value'),
    ),
    cost_usd: typeof cost === 'number' && Number.isFinite(cost) && cost >= 0 ? cost : undefined,
  };
}

const hasGenAiAttributes = (attributes: Map<string, unknown>) => {
  for (const key of attributes.keys()) if (key.startsWith('gen_ai.')) return true;
  const kind = attributes.get('traceloop.span.kind');
  const openInference = openInferenceKind(attributes);
  return (
    kind === 'agent' ||
    kind === 'tool' ||
    openInference === 'AGENT' ||
    (typeof openInference === 'string' && Object.hasOwn(OPENINFERENCE_STEPS, openInference))
  );
};

/** Why a span cannot be taken, or undefined. */
function refusalOf(
  traceId: string,
  spanId: string,
  parentSpanId: string,
  startMs: number | undefined,
  endMs: number | undefined,
): string | undefined {
  if (!HEX_ID.trace.test(traceId) || traceId === ZERO_TRACE_ID) return 'traceId must be 16 bytes, not all zero';
  if (!HEX_ID.span.test(spanId) || spanId === ZERO_SPAN_ID) return 'spanId must be 8 bytes, not all zero';
  if (parentSpanId && !HEX_ID.span.test(parentSpanId)) return 'parentSpanId must be 8 bytes';
  if (startMs === undefined || endMs === undefined || startMs === 0) return 'a span needs its start and end times';
  if (endMs < startMs) return 'a span cannot end before it starts';
  return undefined;
}

/** One span of an export, in the context of its resource's service name and labels. */
export function mapSpan(span: OtlpSpan, service: string, resourceLabels?: SpanLabels): MappedSpan {
  const traceId = span.traceId.toLowerCase();
  const spanId = span.spanId.toLowerCase();
  const parentSpanId = (span.parentSpanId ?? '').toLowerCase();
  const startMs = millisecondsOf(span.startTimeUnixNano);
  const endMs = millisecondsOf(span.endTimeUnixNano);
  const attributes = attributesOf(span.attributes);
  const genAi = hasGenAiAttributes(attributes);
  const startNs = nanosecondsPastMillisecond(span.startTimeUnixNano);
  const base = { spanId, parentSpanId, startMs: startMs ?? 0, startNs, endMs: endMs ?? 0, service };
  if (!genAi) return { traceId, genAi, span: { ...base, role: 'link' } };
  const refusal = refusalOf(traceId, spanId, parentSpanId, startMs, endMs);
  if (refusal) return { rejected: `span ${span.spanId}: ${refusal}` };
  if (isLoopIteration(attributes)) return { traceId, genAi, span: { ...base, role: 'link' } };
  try {
    const failed = ERROR_STATUS.has(span.status?.code as never);
    const error = failed ? asText(span.status?.message || attributes.get('error.type'), 2000) || 'error' : null;
    const step = stepOf(span, attributes, error, base.startMs, base.endMs);
    if (step.type === 'tool' && !step.tool_name)
      throw new UnmappableSpan('a tool span needs gen_ai.tool.name or a name');
    const labels = overResource(labelsOf(attributes), resourceLabels);
    if (!isAgentSpan(attributes)) return { traceId, genAi, span: { ...base, role: 'step', step, labels } };
    const agent = agentOf(span, attributes, error, service);
    return {
      traceId,
      genAi,
      span: { ...base, role: 'agent', step: { ...step, type: 'other', tool_name: undefined }, agent, labels },
    };
  } catch (error) {
    // A span we cannot read, whatever the reason, is this span's refusal, never the export's failure.
    return {
      rejected:
        `span ${span.spanId}: ` + (error instanceof UnmappableSpan ? error.message : 'its attributes cannot be read'),
    };
  }
}

function agentOf(span: OtlpSpan, attributes: Map<string, unknown>, error: string | null, service: string): AgentFields {
  const named =
    asText(first(attributes, 'gen_ai.agent.name', 'agent.name'), 200) ||
    cut((span.name ?? '').replace(/^invoke_agent\s*/, ''), 200);
  return {
    agent_name: named || service,
    input: asText(first(attributes, 'gen_ai.input.messages', 'traceloop.entity.input', 'input.value')) ?? '',
    output: asText(first(attributes, 'gen_ai.output.messages', 'traceloop.entity.output', 'output.value')) ?? '',
    error,
  };
}

// Where instrumentations put a run's session and user: the GenAI conventions, OpenInference (Phoenix), OpenLLMetry's
// association properties, and the AI SDK's telemetry metadata (as `experimental_telemetry: { metadata: { sessionId,
// userId } }` sends them); tags are OpenInference's.
const SESSION_ATTRIBUTES = [
  'gen_ai.conversation.id',
  'session.id',
  'traceloop.association.properties.session_id',
  'ai.telemetry.metadata.sessionId',
];
const USER_ATTRIBUTES = [
  'user.id',
  'enduser.id',
  'traceloop.association.properties.user_id',
  'ai.telemetry.metadata.userId',
];
const MAX_TAGS = 50;

/** A label's text, cut to `limit`; none for an empty one, or one no store can hold (the label, not the span, goes). */
function labelText(value: unknown, limit: number): string | undefined {
  if (typeof value !== 'string' && typeof value !== 'number') return undefined;
  const text = String(value);
  return text === '' || hasLoneSurrogate(text) ? undefined : cut(text, limit);
}

/** The session, user and tags among attributes; undefined when there are none. */
export function labelsOf(attributes: Map<string, unknown>): SpanLabels | undefined {
  const session = labelText(first(attributes, ...SESSION_ATTRIBUTES), 200);
  const user = labelText(first(attributes, ...USER_ATTRIBUTES), 200);
  const sent = attributes.get('tag.tags');
  const tags = Array.isArray(sent)
    ? [...new Set(sent.flatMap((tag) => (typeof tag === 'string' ? (labelText(tag, 100) ?? []) : [])))]
    : [];
  if (session === undefined && user === undefined && tags.length === 0) return undefined;
  return {
    ...(session === undefined ? {} : { session_id: session }),
    ...(user === undefined ? {} : { user_id: user }),
    ...(tags.length === 0 ? {} : { tags: tags.slice(0, MAX_TAGS) }),
  };
}

/** A span's own labels over its resource's, field by field. */
const overResource = (own: SpanLabels | undefined, resource: SpanLabels | undefined): SpanLabels | undefined =>
  own && resource ? { ...resource, ...own } : (own ?? resource);

/** The session, user and tags of a resource, which every span of it carries unless it says otherwise. */
export const resourceLabelsOf = (resource: { attributes?: unknown[] } | undefined): SpanLabels | undefined =>
  labelsOf(attributesOf(resource?.attributes));

/** The resource's service.name; OpenTelemetry SDKs' default when it has none (or none a store can hold). */
export function serviceOf(resource: { attributes?: unknown[] } | undefined): string {
  const name = attributesOf(resource?.attributes).get('service.name');
  return typeof name === 'string' && name !== '' && !hasLoneSurrogate(name) ? cut(name, 200) : 'unknown_service';
}
