// OTLP/HTTP trace export bodies (contract §8): protobuf, decoded with protobufjs over the official
// opentelemetry-proto definitions (schema/otlp, v1.11), or OTLP/JSON; both come out in OTLP/JSON's shape (hex ids,
// lowerCamelCase keys, 64-bit integers as strings) and are validated by the same zod schema.
import path from 'node:path';
import protobuf from 'protobufjs';
import { z } from 'zod';
import { invalidFields, malformedJson } from '../errors';

const PROTO_DIR = path.resolve(__dirname, '..', '..', 'schema', 'otlp');

function loadMessages() {
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => path.join(PROTO_DIR, target);
  root.loadSync('opentelemetry/proto/collector/trace/v1/trace_service.proto');
  return {
    request: root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest'),
    response: root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse'),
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
interface DecodedRequest {
  resourceSpans: { resource?: { attributes: unknown[] } | null; scopeSpans: { spans: DecodedSpan[] }[] }[];
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

/**
 * A protobuf body in OTLP/JSON's shape, with only the fields runs and steps are made of; attributes stay the decoded
 * messages, which genai.ts reads as it reads OTLP/JSON's (protobufjs's generic toObject would copy every field, and
 * write bytes in base64, to be turned into hex after). Throws when it does not decode.
 */
function fromProtobuf(body: Buffer): unknown {
  const { request } = otlpMessages();
  const decoded = request.decode(body) as unknown as DecodedRequest;
  return {
    resourceSpans: decoded.resourceSpans.map((resourceSpans) => ({
      resource: { attributes: resourceSpans.resource?.attributes ?? [] },
      scopeSpans: resourceSpans.scopeSpans.map((scopeSpans) => ({
        spans: scopeSpans.spans.map((span) => ({
          traceId: hex(span.traceId),
          spanId: hex(span.spanId),
          parentSpanId: hex(span.parentSpanId),
          name: span.name,
          startTimeUnixNano: nanosText(span.startTimeUnixNano),
          endTimeUnixNano: nanosText(span.endTimeUnixNano),
          attributes: span.attributes,
          status: span.status ? { message: span.status.message, code: span.status.code } : undefined,
        })),
      })),
    })),
  };
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

/** A body, protobuf or OTLP/JSON, in OTLP/JSON's shape (still to be validated); a 400 when it does not decode. */
export function decodeBody(body: Buffer, mediaType: string): unknown {
  if (mediaType === JSON_MEDIA_TYPE) {
    try {
      return JSON.parse(body.length === 0 ? '{}' : body.toString('utf8'));
    } catch {
      throw malformedJson();
    }
  }
  try {
    return fromProtobuf(body);
  } catch (error) {
    throw invalidFields([
      { path: '', message: `not a protobuf ExportTraceServiceRequest: ${(error as Error).message}` },
    ]);
  }
}

/** The answer to an export in the request's encoding. */
export function encodeResponse(result: ExportTraceResponse, mediaType: string): Buffer {
  if (mediaType === JSON_MEDIA_TYPE) return Buffer.from(JSON.stringify(result));
  const { response } = otlpMessages();
  return Buffer.from(response.encode(response.fromObject(result)).finish());
}
