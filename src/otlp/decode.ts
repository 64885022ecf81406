// OTLP/HTTP trace export bodies (contract §8): protobuf, decoded with protobufjs over the official
// opentelemetry-proto definitions (schema/otlp, v1.11), or OTLP/JSON; both come out in OTLP/JSON's shape (hex ids,
// lowerCamelCase keys, 64-bit integers as strings) and are validated by the same zod schema.
import path from 'node:path';
import protobuf from 'protobufjs';
import { z } from 'zod';
import { invalidFields, malformedJson, validationError } from '../errors';
import { utf8Text } from '../http/body';

const PROTO_DIR = path.resolve(__dirname, '..', '..', 'schema', 'otlp');

function loadMessages() {
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => path.join(PROTO_DIR, target);
  root.loadSync('opentelemetry/proto/collector/trace/v1/trace_service.proto');
  return {
    request: root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest'),
    response: root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse'),
    resource: root.lookupType('opentelemetry.proto.resource.v1.Resource'),
    span: root.lookupType('opentelemetry.proto.trace.v1.Span'),
  };
}
let messages: ReturnType<typeof loadMessages> | undefined;
/** The export request and response messages, loaded once. */
export const otlpMessages = () => (messages ??= loadMessages());

// OTLP receivers ignore fields they do not know (the protocol adds fields over time), so these objects are loose.
// 64-bit integers come as decimal strings or as JSON numbers; enums as numbers. An attribute is read for the keys
// runs and steps are made of, its value leniently (genai.ts): one that is no AnyValue is ignored, as OTLP asks.
// A JSON number of nanoseconds is past 2^53 today: it is taken as the double it is (to the microsecond).
const uint64 = z.union([z.string().regex(/^\d{1,20}$/, 'must be an unsigned 64-bit integer'), z.number().min(0)]);
const attributes = z.array(z.unknown()).optional();

const span = z.looseObject({
  traceId: z.string(),
  spanId: z.string(),
  parentSpanId: z.string().optional(),
  name: z.string().optional(),
  startTimeUnixNano: uint64.optional(),
  endTimeUnixNano: uint64.optional(),
  attributes,
  status: z
    .looseObject({ message: z.string().optional(), code: z.union([z.number(), z.string()]).optional() })
    .optional(),
});

export const exportTraceRequest = z
  .looseObject({
    resourceSpans: z
      .array(
        z.looseObject({
          resource: z.looseObject({ attributes }).optional(),
          scopeSpans: z.array(z.looseObject({ spans: z.array(span).optional() })).optional(),
        }),
      )
      .optional(),
  })
  .meta({ id: 'ExportTraceServiceRequest' });
export type OtlpSpan = z.infer<typeof span>;

/** The media types of OTLP/HTTP. */
export const OTLP_MEDIA_TYPES = ['application/x-protobuf', 'application/json'] as const;
const JSON_MEDIA_TYPE = 'application/json';

// What protobufjs decodes: messages whose set fields are own properties (attributes are read as they are).
interface Long {
  low: number;
  high: number;
}
interface DecodedSpan {
  traceId: Uint8Array;
  spanId: Uint8Array;
  parentSpanId: Uint8Array | number[];
  name: string;
  startTimeUnixNano: Long | number;
  endTimeUnixNano: Long | number;
  attributes: unknown[];
  status?: { message: string; code: number } | null;
}
interface DecodedResource {
  attributes: unknown[];
}

// A field left unset holds protobufjs's default, an empty array rather than a buffer.
const hex = (bytes: Uint8Array | number[]) =>
  (bytes instanceof Uint8Array
    ? Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
    : Buffer.from(bytes)
  ).toString('hex');
/** A fixed64 of nanoseconds as OTLP/JSON's decimal string, exactly (a double cannot hold today's nanoseconds). */
function nanosText(value: Long | number): string {
  if (typeof value === 'number') return String(value);
  return ((BigInt(value.high >>> 0) << 32n) | BigInt(value.low >>> 0)).toString();
}

/** A decoded span in OTLP/JSON's shape, with only the fields runs and steps are made of. */
function spanFromProtobuf(span: DecodedSpan): unknown {
  return {
    traceId: hex(span.traceId),
    spanId: hex(span.spanId),
    parentSpanId: hex(span.parentSpanId),
    name: span.name,
    startTimeUnixNano: nanosText(span.startTimeUnixNano),
    endTimeUnixNano: nanosText(span.endTimeUnixNano),
    attributes: span.attributes,
    status: span.status ? { message: span.status.message, code: span.status.code } : undefined,
  };
}

/** A length-delimited field (wire type 2) of the given number. */
const isMessageField = (tag: number, field: number) => tag >>> 3 === field && (tag & 7) === 2;

/** The fields `field` (length-delimited) of the message between the reader's position and `end`, as [start, end]. */
function fieldsOf(reader: protobuf.Reader, end: number, field: number): [number, number][] {
  const found: [number, number][] = [];
  while (reader.pos < end) {
    const tag = reader.uint32();
    if (!isMessageField(tag, field)) {
      reader.skipType(tag & 7);
      continue;
    }
    const length = reader.uint32();
    found.push([reader.pos, reader.pos + length]);
    reader.skip(length);
  }
  return found;
}

/** One resource's spans: what genai.ts reads of the resource, and its spans, decoded one at a time as they are read. */
export interface ResourceGroup {
  resource: { attributes?: unknown[] } | undefined;
  spans: Iterable<OtlpSpan>;
}

/**
 * The spans of a protobuf body, one at a time, each decoded and validated as it is read: the whole decoded request (a
 * 10 MB export is ~100,000 spans, each several objects) is never held at once, only the spans mapped from it.
 * Fields: ExportTraceServiceRequest.resource_spans (1); ResourceSpans.resource (1), .scope_spans (2);
 * ScopeSpans.spans (2).
 * Throws a 400 when it does not decode.
 */
function* protobufGroups(body: Buffer): Generator<ResourceGroup> {
  const { resource: resourceType, span: spanType } = otlpMessages();
  const reader = protobuf.Reader.create(body);
  for (const [start, end] of undecodable(() => fieldsOf(reader, body.length, 1))) {
    const [resource, scopes] = undecodable(() => {
      reader.pos = start;
      const [resourceAt] = fieldsOf(reader, end, 1);
      reader.pos = start;
      const scopeSpans = fieldsOf(reader, end, 2);
      const decoded = resourceAt && (resourceType.decode(body.subarray(...resourceAt)) as unknown as DecodedResource);
      return [{ attributes: decoded?.attributes ?? [] }, scopeSpans] as const;
    });
    yield { resource, spans: scopeSpansOf(body, reader, scopes, spanType) };
  }
}

function* scopeSpansOf(
  body: Buffer,
  reader: protobuf.Reader,
  scopes: readonly [number, number][],
  spanType: protobuf.Type,
): Generator<OtlpSpan> {
  for (const [start, end] of scopes) {
    reader.pos = start;
    for (const at of undecodable(() => fieldsOf(reader, end, 2))) {
      const decoded = undecodable(() => spanType.decode(body.subarray(...at)) as unknown as DecodedSpan);
      const parsed = span.safeParse(spanFromProtobuf(decoded));
      if (!parsed.success) throw validationError('validation_failed', parsed.error.issues, ['spans']);
      yield parsed.data;
    }
  }
}

/** What `decode` returns; a 400 when it throws (the body is no protobuf ExportTraceServiceRequest). */
function undecodable<T>(decode: () => T): T {
  try {
    return decode();
  } catch (error) {
    throw invalidFields([
      { path: '', message: `not a protobuf ExportTraceServiceRequest: ${(error as Error).message}` },
    ]);
  }
}

/** The result of an export, as its JSON encoding writes it: `partialSuccess` only when some spans were rejected. */
export const exportTraceResponse = z
  .object({
    partialSuccess: z
      .object({ rejectedSpans: z.string().describe('a 64-bit integer'), errorMessage: z.string() })
      .optional(),
  })
  .meta({ id: 'ExportTraceServiceResponse' });
export type ExportTraceResponse = z.infer<typeof exportTraceResponse>;

/**
 * A body's spans by resource: OTLP/JSON parsed and validated whole; protobuf decoded span by span. A 400 when it does
 * not decode or a span is not of OTLP's shape.
 */
export function exportGroups(body: Buffer, mediaType: string): Iterable<ResourceGroup> {
  if (mediaType !== JSON_MEDIA_TYPE) return protobufGroups(body);
  // Bytes that are not UTF-8 make the body malformed, as on every JSON route, rather than names stored with U+FFFD.
  const text = utf8Text(body);
  let json: unknown;
  try {
    json = JSON.parse(text.length === 0 ? '{}' : text);
  } catch {
    throw malformedJson();
  }
  const parsed = exportTraceRequest.safeParse(json);
  if (!parsed.success) throw validationError('validation_failed', parsed.error.issues);
  return (parsed.data.resourceSpans ?? []).map((resourceSpans) => ({
    resource: resourceSpans.resource,
    spans: (resourceSpans.scopeSpans ?? []).flatMap((scopeSpans) => scopeSpans.spans ?? []),
  }));
}

/** The answer to an export in the request's encoding. */
export function encodeResponse(result: ExportTraceResponse, mediaType: string): Buffer {
  if (mediaType === JSON_MEDIA_TYPE) return Buffer.from(JSON.stringify(result));
  const { response } = otlpMessages();
  return Buffer.from(response.encode(response.fromObject(result)).finish());
}
