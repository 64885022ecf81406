// HTTP declaration of OpenTelemetry ingest (contract §8): OTLP/HTTP trace exports, protobuf or JSON, with the
// project API key that OTEL_EXPORTER_OTLP_HEADERS sets, gzip or not (http/body.ts decompresses). The body is
// decoded, validated against `exportTraceRequest` and mapped in a worker thread (mapping-pool.ts): the route gets
// the mapped export.
import { z } from 'zod';
import { defineRoute, type BodyCodec } from '../http/route';
import type { Clock } from '../clock';
import {
  encodeResponse,
  exportTraceRequest,
  exportTraceResponse,
  OTLP_MEDIA_TYPES,
  type ExportTraceResponse,
} from './decode';
import { isMappedExport, type MappedExport } from './mapping';
import type { MappingPool } from './mapping-pool';
import type { OtlpService } from './service';

const mappedExport = z.custom<MappedExport>(isMappedExport, { message: 'must be an OTLP export' });

export function otlpRoutes(otlp: OtlpService, pool: MappingPool, clock: Clock, bodyLimit: number) {
  const codec: BodyCodec = {
    mediaTypes: OTLP_MEDIA_TYPES,
    decode: (body, mediaType) => pool.map(body, mediaType, clock.now().getTime()),
    encode: (result, mediaType) => encodeResponse(result as ExportTraceResponse, mediaType),
  };
  // Route declarations are a table: the route, then its checks and schemas, then its handler, a line or two each.
  // prettier-ignore
  return [
    defineRoute({
      method: 'post', path: '/v1/traces', operationId: 'exportTraces', tag: 'OpenTelemetry',
      summary: 'Export traces (OTLP/HTTP): GenAI spans become runs and steps',
      auth: { kind: 'apiKey' }, bodyLimit, codec, body: mappedExport, documentedBody: exportTraceRequest,
      response: exportTraceResponse,
      handler: ({ caller, body }) => otlp.export(caller.projectId, body),
    }),
  ];
}
