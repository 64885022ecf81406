// The real OpenTelemetry JS SDK as the client of the OTLP tests: spans recorded by a tracer provider, exported by
// the OTLP/HTTP exporters (protobuf and JSON) to the real service listening on a port.
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { context, SpanStatusCode, trace, type Attributes, type Span } from '@opentelemetry/api';
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace-base';
import { runIdOf } from '../../src/otlp/genai';
import type { TestApp } from '../support/app';

/** A span to record: its name, attributes, an error status message, and its children, each 10 ms after the last. */
export interface SpanSpec {
  name: string;
  attributes?: Attributes;
  error?: string;
  children?: SpanSpec[];
}

export const agent = (name: string, children: SpanSpec[] = [], attributes: Attributes = {}): SpanSpec => ({
  name: `invoke_agent ${name}`,
  attributes: { 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': name, ...attributes },
  children,
});
export const chat = (model: string, attributes: Attributes = {}): SpanSpec => ({
  name: `chat ${model}`,
  attributes: { 'gen_ai.operation.name': 'chat', 'gen_ai.request.model': model, ...attributes },
});
export const toolCall = (tool: string, args: string, result: string, attributes: Attributes = {}): SpanSpec => ({
  name: `execute_tool ${tool}`,
  attributes: {
    'gen_ai.operation.name': 'execute_tool',
    'gen_ai.tool.name': tool,
    'gen_ai.tool.call.arguments': args,
    'gen_ai.tool.call.result': result,
    ...attributes,
  },
});
export const plain = (name: string, children: SpanSpec[] = []): SpanSpec => ({
  name,
  attributes: { 'http.request.method': 'GET' },
  children,
});

/** A recorded trace: its spans in the order they ended (children first, as a batch processor exports them). */
export interface RecordedTrace {
  traceId: string;
  spans: ReadableSpan[];
  /** The span of a name; the first when several have it. */
  span(name: string): ReadableSpan;
}

/** The run an agent span (or a GenAI span with no agent above it) becomes: its id and start time. */
export function runOf(span: ReadableSpan) {
  const { traceId, spanId } = span.spanContext();
  return {
    id: runIdOf(traceId, spanId),
    timestamp: new Date(span.startTime[0] * 1000 + Math.floor(span.startTime[1] / 1e6)).toISOString(),
  };
}

export function tracing(serviceName = 'support-bot', resourceAttributes: Attributes = {}) {
  const memory = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': serviceName, ...resourceAttributes }),
    spanProcessors: [new SimpleSpanProcessor(memory)],
  });
  const tracer = provider.getTracer('runwatch-tests');

  /** Records `spec` and its children from `startMs`; returns the spans in end order and the end time. */
  function recordSpan(
    spec: SpanSpec,
    parent: Span | undefined,
    startMs: number,
  ): { spans: ReadableSpan[]; endMs: number } {
    const parentContext = parent ? trace.setSpan(context.active(), parent) : context.active();
    const span = tracer.startSpan(spec.name, { attributes: spec.attributes, startTime: startMs }, parentContext);
    const spans: ReadableSpan[] = [];
    let at = startMs + 10;
    for (const child of spec.children ?? []) {
      const recorded = recordSpan(child, span, at);
      spans.push(...recorded.spans);
      at = recorded.endMs + 10;
    }
    if (spec.error !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: spec.error });
    span.end(at);
    spans.push(span as unknown as ReadableSpan);
    return { spans, endMs: at };
  }

  return {
    /** Records a trace rooted at `spec`, starting a minute ago. */
    record(spec: SpanSpec, startMs = Date.now() - 60_000): RecordedTrace {
      const { spans } = recordSpan(spec, undefined, startMs);
      return {
        traceId: spans[0].spanContext().traceId,
        spans,
        span: (name) => spans.find((span) => span.name === name)!,
      };
    },
  };
}

export type Encoding = 'protobuf' | 'json';

/** The service on a real port, for the exporters. */
export function listen(app: TestApp): Promise<{ url: string; close(): Promise<void> }> {
  return new Promise((resolve) => {
    const server: Server = app.app.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      resolve({ url: `http://127.0.0.1:${port}`, close: () => new Promise((done) => server.close(() => done())) });
    });
  });
}

/** An OTLP/HTTP exporter of the SDK, to the service with a project's API key; timeout: the SDK's 10 s unless given. */
export function exporter(
  url: string,
  key: string,
  encoding: Encoding = 'protobuf',
  gzip = false,
  timeoutMillis?: number,
) {
  const Exporter = encoding === 'protobuf' ? ProtobufExporter : JsonExporter;
  const instance = new Exporter({
    url: `${url}/v1/traces`,
    headers: { Authorization: `Bearer ${key}` },
    compression: (gzip ? 'gzip' : 'none') as never,
    timeoutMillis,
  });
  return {
    /** Exports the spans in one request; resolves with the SDK's result (code 0 is success). */
    send: (spans: readonly ReadableSpan[]) =>
      new Promise<{ code: number; error?: Error }>((resolve) => instance.export([...spans], resolve)),
  };
}
