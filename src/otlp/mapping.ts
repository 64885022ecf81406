// An export's body to the spans runs and steps are made of, by trace: decoded, validated with the route's zod
// schemas, mapped (genai.ts), span by span for protobuf. A pure function of the body: it runs in a worker thread
// (mapping-pool.ts).
import { exportGroups } from './decode';
import { mapSpan, resourceLabelsOf, serviceOf, type TraceSpan } from './genai';

/** A span starting later than this after now is refused (as a run start is, contract §4). */
const MAX_FUTURE_MS = 5 * 60 * 1000;

/** An export mapped: its spans by trace (in the order they came), whether each trace has GenAI spans, and refusals. */
export interface MappedExport {
  traces: { traceId: string; spans: TraceSpan[]; genAi: boolean }[];
  rejections: string[];
}

/** Whether a value is a mapped export (what the route's body check asks of what the decoder hands over). */
export const isMappedExport = (value: unknown): value is MappedExport =>
  typeof value === 'object' &&
  value !== null &&
  Array.isArray((value as MappedExport).traces) &&
  Array.isArray((value as MappedExport).rejections);

export function mapExport(body: Buffer, mediaType: string, nowMs: number): MappedExport {
  const byTrace = new Map<string, MappedExport['traces'][number]>();
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
