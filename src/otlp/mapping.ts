// An export's body to the spans runs and steps are made of, by trace: decoded, validated with the route's zod
// schemas, mapped (genai.ts), span by span for protobuf. A pure function of the body: it runs in a worker thread
// (mapping-pool.ts).
import { inChunks } from '../chunks';
import { exportGroups } from './decode';
import { mapSpan, resourceLabelsOf, serviceOf, type TraceSpan } from './genai';

/** A span starting later than this after now is refused (as a run start is, contract §4). */
const MAX_FUTURE_MS = 5 * 60 * 1000;

/** A trace of an export: its spans (in the order they came), and whether it has GenAI spans. */
export interface MappedTrace {
  traceId: string;
  spans: TraceSpan[];
  genAi: boolean;
}

/** An export's spans mapped, by trace, and its refusals. */
interface MappedTraces {
  traces: MappedTrace[];
  rejections: string[];
}

/**
 * An export mapped, as the service takes it: its traces in parts of at most SPANS_PER_PART spans (whole traces), in
 * order, each taken when it is recorded (from a worker, each part is decoded only then: mapping-pool.ts), and its
 * refusals.
 */
export interface MappedExport {
  parts: Iterable<MappedTrace[]>;
  rejections: string[];
}

/** Spans of an export recorded together at most (whole traces: a trace bigger than this is a part of its own). */
export const SPANS_PER_PART = 5000;

/** Whether a value is a mapped export (what the route's body check asks of what the decoder hands over). */
export const isMappedExport = (value: unknown): value is MappedExport =>
  typeof value === 'object' &&
  value !== null &&
  typeof (value as MappedExport).parts?.[Symbol.iterator] === 'function' &&
  Array.isArray((value as MappedExport).rejections);

/** The export mapped, its parts ready (mapping on the event loop, when there are no workers). */
export function mapExport(body: Buffer, mediaType: string, nowMs: number): MappedExport {
  const { traces, rejections } = mapTraces(body, mediaType, nowMs);
  return { parts: inChunks(traces, (trace) => trace.spans.length, SPANS_PER_PART), rejections };
}

function mapTraces(body: Buffer, mediaType: string, nowMs: number): MappedTraces {
  const byTrace = new Map<string, MappedTrace>();
  const rejections: string[] = [];
  // Spans are mapped as they are decoded (one at a time, for protobuf): only what they map to is held.
  for (const { resource, spans } of exportGroups(body, mediaType)) {
    const service = serviceOf(resource);
    const resourceLabels = resourceLabelsOf(resource);
    for (const span of spans) {
      const mapped = mapSpan(span, service, resourceLabels);
      if ('rejected' in mapped) rejections.push(mapped.rejected);
      else if (mapped.span.role !== 'link' && mapped.span.startMs > nowMs + MAX_FUTURE_MS)
        rejections.push(`span ${mapped.span.spanId}: starts more than 5 minutes in the future`);
      else {
        let trace = byTrace.get(mapped.traceId);
        if (!trace) byTrace.set(mapped.traceId, (trace = { traceId: mapped.traceId, spans: [], genAi: false }));
        trace.spans.push(mapped.span);
        trace.genAi ||= mapped.genAi;
      }
    }
  }
  return { traces: [...byTrace.values()], rejections };
}
