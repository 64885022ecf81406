// The big OTLP export of the overload probe (issue 22): ~10 MB of protobuf holding 115,000 `chat` spans, each a trace
// of its own with no agent above it (so each becomes a run of one step: the most work per byte); or as many spans as
// asked, each with a prompt of `promptBytes` to keep the export's size (fewer, bigger spans). Encoded with the
// official OpenTelemetry definitions (schema/otlp), as exporters encode it: one span is encoded, then copied with
// fresh ids into the request's repeated fields (protobuf's wire format is a concatenation of fields).
import { randomBytes } from 'node:crypto';
import protobuf from 'protobufjs';
import { otlpMessages } from '../../src/otlp/decode';

/** Chat spans in an export of about 10 MB. */
export const BIG_EXPORT_SPANS = 115_000;

/** A length-delimited field (wire type 2) of the given number. */
const fieldTag = (field: number) => (field << 3) | 2;

export function bigExport(service: string, spans = BIG_EXPORT_SPANS, promptBytes = 0): Buffer {
  const { resource, span } = otlpMessages();
  const [traceId, spanId] = [randomBytes(16), randomBytes(8)];
  const startNanos = BigInt(Date.now() - 60_000) * 1_000_000n;
  const template = Buffer.from(
    span
      .encode(
        span.fromObject({
          traceId,
          spanId,
          name: 'chat',
          startTimeUnixNano: String(startNanos),
          endTimeUnixNano: String(startNanos + 5_000_000n),
          attributes: [
            { key: 'gen_ai.operation.name', value: { stringValue: 'chat' } },
            ...(promptBytes > 0
              ? [{ key: 'gen_ai.input.messages', value: { stringValue: 'x'.repeat(promptBytes) } }]
              : []),
          ],
        }),
      )
      .finish(),
  );
  const [traceAt, spanAt] = [template.indexOf(traceId), template.indexOf(spanId)];
  const scopeSpans = protobuf.Writer.create();
  for (let i = 0; i < spans; i += 1) {
    const copy = Buffer.from(template);
    randomBytes(16).copy(copy, traceAt);
    randomBytes(8).copy(copy, spanAt);
    scopeSpans.uint32(fieldTag(2)).bytes(copy);
  }
  const resourceBytes = resource
    .encode(resource.fromObject({ attributes: [{ key: 'service.name', value: { stringValue: service } }] }))
    .finish();
  const resourceSpans = protobuf.Writer.create()
    .uint32(fieldTag(1))
    .bytes(resourceBytes)
    .uint32(fieldTag(2))
    .bytes(scopeSpans.finish())
    .finish();
  return Buffer.from(protobuf.Writer.create().uint32(fieldTag(1)).bytes(resourceSpans).finish());
}
