// A project as a team's would look after a month: 2,000 runs of three agents through the batch API (models priced
// by the service, failures with their reasons, loops, runs still going), OpenTelemetry runs through the SDK's
// exporter, and alert rules. For the dashboard's tour in the browser (every page at desktop and phone width).
import { context, trace } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { runIdOf } from '../../src/otlp/genai';

const AGENTS = ['support', 'planner', 'researcher'] as const;
const MODELS = ['gpt-4o-mini', 'gpt-4o', 'claude-3-5-sonnet'];
const TOOLS = ['search_orders', 'lookup_customer', 'send_email', 'web_search'];
const QUESTIONS = [
  'Where is my order 4217? It was supposed to arrive on Monday.',
  'Plan a three-day trip to Lisbon for two, mid-range hotels.',
  'Summarize the last quarter results of ACME Corp.',
  'Cancel my subscription and refund the last payment.',
  'Which of our customers in Berlin ordered more than twice this month?',
];
const DAY_MS = 86_400_000;

/** A deterministic pseudo-random sequence, so that every tour sees the same project. */
function random(seed: number) {
  let state = seed;
  return () => {
    state = (state * 1664525 + 1013904223) % 4294967296;
    return state / 4294967296;
  };
}

export interface DemoProject {
  token: string;
  orgId: string;
  projectId: string;
  key: string;
  /** A run with a loop, and an OpenTelemetry run with a conversation, for their pages. */
  loopingRun: { id: string; timestamp: string };
  otlpRun: { id: string; timestamp: string };
}

async function call<T>(base: string, method: string, path: string, body?: unknown, token?: string): Promise<T> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { 'Content-Type': 'application/json', ...(token ? { Authorization: `Bearer ${token}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return (text ? JSON.parse(text) : undefined) as T;
}

/** The start of a run `i` of `count`: most in the last day, a tenth in the last hour, the rest over 30 days. */
function startOf(i: number, count: number, next: () => number, now: number): number {
  const share = i / count;
  if (share < 0.1) return now - next() * 3_600_000;
  if (share < 0.45) return now - next() * DAY_MS;
  return now - next() * 30 * DAY_MS;
}

function demoRun(i: number, next: () => number, now: number) {
  const agent = AGENTS[i % 3];
  const start = startOf(i, 2000, next, now);
  const steps = [];
  let at = start + 20;
  const stepCount = 2 + Math.floor(next() * 5);
  for (let index = 0; index < stepCount; index += 1) {
    const llm = index % 2 === 0;
    const duration = llm ? 300 + Math.floor(next() * 2500) : 50 + Math.floor(next() * 800);
    steps.push(
      llm
        ? {
            index,
            type: 'llm',
            model: MODELS[(i + index) % 3],
            input_tokens: 200 + Math.floor(next() * 3000),
            output_tokens: 20 + Math.floor(next() * 400),
            started_at: new Date(at).toISOString(),
            duration_ms: duration,
            input: QUESTIONS[i % QUESTIONS.length],
            output: `call ${TOOLS[(i + index) % 4]}`,
          }
        : {
            index,
            type: 'tool',
            tool_name: TOOLS[(i + index) % 4],
            input: JSON.stringify({ query: `q${i % 50}`, page: index }),
            output: `${1 + (i % 7)} results`,
            started_at: new Date(at).toISOString(),
            duration_ms: duration,
            ...(i % 23 === 0 ? { error: 'upstream returned 502 Bad Gateway' } : {}),
          },
    );
    at += duration + 10;
  }
  const roll = next();
  // The researcher is the slow, failing one; the planner loops now and then.
  const failing = agent === 'researcher' ? roll < 0.18 : roll < 0.05;
  const looping = agent === 'planner' && i % 17 === 0;
  if (looping) {
    for (let repeat = 0; repeat < 4; repeat += 1) {
      steps.push({
        index: steps.length,
        type: 'tool',
        tool_name: 'search_orders',
        input: '{"order":4217}',
        output: 'not found',
        started_at: new Date(at).toISOString(),
        duration_ms: 120,
      });
      at += 130;
    }
  }
  const slow = agent === 'researcher' ? 1 + next() * 40_000 : next() * 4000;
  return {
    agent_name: agent,
    timestamp: new Date(start).toISOString(),
    finished_at: new Date(Math.min(at + slow, now)).toISOString(),
    input: QUESTIONS[i % QUESTIONS.length],
    output: failing ? '' : 'Done: the answer was sent to the customer.',
    status: failing ? (roll < 0.04 ? 'timed_out' : 'failed') : 'completed',
    ...(failing && roll >= 0.04
      ? { termination_reason: 'error', termination_detail: 'ToolError: web_search timed out after 30 s' }
      : {}),
    metadata: [i % 5, Math.round(next() * 100) / 100],
    steps,
  };
}

/** Runs recorded with the OpenTelemetry SDK: an agent span, a chat span with its messages, a tool span. */
async function sendOtlpRuns(base: string, key: string, now: number): Promise<{ traceId: string; spanId: string }> {
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'concierge' }),
    spanProcessors: [
      new SimpleSpanProcessor(
        new OTLPTraceExporter({ url: `${base}/v1/traces`, headers: { Authorization: `Bearer ${key}` } }),
      ),
    ],
  });
  const tracer = provider.getTracer('demo');
  let first: { traceId: string; spanId: string } | undefined;
  for (let i = 0; i < 12; i += 1) {
    const start = now - (i + 1) * 290_000;
    const question = QUESTIONS[i % QUESTIONS.length];
    const agent = tracer.startSpan(
      'invoke_agent concierge',
      {
        startTime: start,
        attributes: {
          'gen_ai.operation.name': 'invoke_agent',
          'gen_ai.agent.name': 'concierge',
          'gen_ai.input.messages': JSON.stringify([{ role: 'user', parts: [{ type: 'text', content: question }] }]),
        },
      },
      context.active(),
    );
    const inAgent = trace.setSpan(context.active(), agent);
    const chat = tracer.startSpan(
      'chat gpt-4o-mini',
      {
        startTime: start + 5,
        attributes: {
          'gen_ai.operation.name': 'chat',
          'gen_ai.request.model': 'gpt-4o-mini',
          'gen_ai.input.messages': JSON.stringify([
            { role: 'system', parts: [{ type: 'text', content: 'You are a concierge. Use the tools.' }] },
            { role: 'user', parts: [{ type: 'text', content: question }] },
          ]),
          'gen_ai.output.messages': JSON.stringify([
            {
              role: 'assistant',
              parts: [{ type: 'tool_call', id: 'call_1', name: 'search_orders', arguments: { order: 4217 } }],
              finish_reason: 'tool_call',
            },
          ]),
          'gen_ai.usage.input_tokens': 412 + i,
          'gen_ai.usage.output_tokens': 38,
        },
      },
      inAgent,
    );
    chat.end(start + 900);
    const tool = tracer.startSpan(
      'execute_tool search_orders',
      {
        startTime: start + 905,
        attributes: {
          'gen_ai.operation.name': 'execute_tool',
          'gen_ai.tool.name': 'search_orders',
          'gen_ai.tool.call.arguments': '{"order":4217}',
          'gen_ai.tool.call.result': '{"status":"shipped","eta":"tomorrow"}',
        },
      },
      inAgent,
    );
    tool.end(start + 1100);
    agent.setAttribute(
      'gen_ai.output.messages',
      JSON.stringify([
        { role: 'assistant', parts: [{ type: 'text', content: 'It has shipped; it arrives tomorrow.' }] },
      ]),
    );
    agent.end(start + 1500);
    first ??= { traceId: agent.spanContext().traceId, spanId: agent.spanContext().spanId };
  }
  await provider.shutdown();
  return first!;
}

/**
 * Registers a user and fills a project. `webhookUrl`: where the alert rules post (a receiver of the caller's).
 * Returns the ids a tour needs; evaluating the rules is the caller's (a test's manual clock, or the real evaluator).
 */
export async function seedDemoProject(base: string, webhookUrl: string, now = Date.now()): Promise<DemoProject> {
  const email = `demo-${now}-${Math.floor(Math.random() * 1e6)}@example.com`;
  const auth = await call<{ token: string; organizations: { id: string }[] }>(base, 'POST', '/auth/register', {
    email,
    password: 'correct horse battery',
    name: 'Ada Lovelace',
  });
  const token = auth.token;
  const orgId = auth.organizations[0].id;
  const project = await call<{ id: string }>(
    base,
    'POST',
    `/admin/orgs/${orgId}/projects`,
    { name: 'support-bot' },
    token,
  );
  await call(base, 'POST', `/admin/orgs/${orgId}/projects`, { name: 'internal-tools' }, token);
  const { key } = await call<{ key: string }>(
    base,
    'POST',
    `/admin/orgs/${orgId}/projects/${project.id}/api-keys`,
    { name: 'production' },
    token,
  );
  const next = random(42);
  const runs = Array.from({ length: 2000 }, (_, i) => demoRun(i, next, now));
  let loopingRun: DemoProject['loopingRun'] | undefined;
  for (let batch = 0; batch < runs.length; batch += 1000) {
    const items = runs.slice(batch, batch + 1000);
    const { results } = await call<{ results: { id?: string; timestamp?: string; error?: unknown }[] }>(
      base,
      'POST',
      '/ingest/agent/runs/batch',
      { runs: items },
      key,
    );
    const failed = results.find((result) => result.error);
    if (failed) throw new Error(`a demo run was refused: ${JSON.stringify(failed.error)}`);
    const looping = items.findIndex((run) => run.steps.length > 6 && run.agent_name === 'planner');
    if (!loopingRun && looping >= 0) loopingRun = results[looping] as DemoProject['loopingRun'];
  }
  // Runs still going: started, a step or two in.
  for (let i = 0; i < 4; i += 1) {
    const started = await call<{ id: string; timestamp: string }>(
      base,
      'POST',
      '/ingest/agent/runs',
      { agent_name: AGENTS[i % 3], input: QUESTIONS[i], timestamp: new Date(now - (i + 1) * 20_000).toISOString() },
      key,
    );
    await call(
      base,
      'POST',
      `/ingest/agent/runs/${started.id}/steps`,
      {
        timestamp: started.timestamp,
        steps: [{ index: 0, type: 'llm', model: 'gpt-4o', input_tokens: 900, output_tokens: 50, output: 'thinking' }],
      },
      key,
    );
  }
  const otlp = await sendOtlpRuns(base, key, now);
  const rules = `/admin/orgs/${orgId}/projects/${project.id}/alert-rules`;
  const channel = { channel: 'webhook', channel_config: { url: webhookUrl } };
  const rule = (fields: object) => call(base, 'POST', rules, { ...fields, ...channel }, token);
  await rule({
    name: 'Researcher completion dropped',
    class: 'aggregate',
    signal: 'completion_rate',
    comparator: 'lt',
    threshold: 0.95,
    agent_name: 'researcher',
    window_seconds: 3600,
    min_requests: 5,
    severity: 'critical',
  });
  await rule({
    name: 'Slow runs',
    class: 'aggregate',
    signal: 'duration_p95_ms',
    comparator: 'gt',
    threshold: 30_000,
    window_seconds: 86_400,
    min_requests: 10,
    severity: 'warning',
  });
  // A rule that fires and resolves as the planner's loops come and go.
  await rule({
    name: 'Planner loops',
    class: 'aggregate',
    signal: 'loop_rate',
    comparator: 'gt',
    threshold: 0.05,
    agent_name: 'planner',
    window_seconds: 3600,
    min_requests: 5,
    severity: 'warning',
  });
  await rule({
    name: 'Expensive run',
    class: 'per_run',
    signal: 'run_cost_usd',
    comparator: 'gt',
    threshold: 0.5,
    severity: 'info',
  });
  return {
    token,
    orgId,
    projectId: project.id,
    key,
    loopingRun: loopingRun!,
    otlpRun: { id: runIdOf(otlp.traceId, otlp.spanId), timestamp: new Date(now - 290_000).toISOString() },
  };
}
