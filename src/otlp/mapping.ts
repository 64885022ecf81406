// An export's body to the spans runs and steps are made of, by trace: decoded, validated with the route's zod
// schema, mapped (genai.ts). A pure function of the body: it runs in a worker thread (mapping-pool.ts).
import { validationError } from '../errors';
import { decodeBody, exportTraceRequest } from './decode';
import { mapSpan, serviceOf, type TraceSpan } from './genai';

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
  const parsed = exportTraceRequest.safeParse(decodeBody(body, mediaType));
  if (!parsed.success) throw validationError('validation_failed', parsed.error.issues);
  const byTrace = new Map<string, MappedExport['traces'][number]>();
  const rejections: string[] = [];
  for (const resourceSpans of parsed.data.resourceSpans ?? []) {
    const service = serviceOf(resourceSpans.resource);
    for (const scopeSpans of resourceSpans.scopeSpans ?? []) {
      for (const span of scopeSpans.spans ?? []) {
        const mapped = mapSpan(span, service);
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
  }
  return { traces: [...byTrace.values()], rejections };
}
