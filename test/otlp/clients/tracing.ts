// The OpenTelemetry set-up an agent's process makes to report to runwatch: a Node tracer provider (it keeps the
// active span across awaits) with a batch processor and the OTLP/HTTP protobuf exporter, which reads
// OTEL_EXPORTER_OTLP_ENDPOINT and OTEL_EXPORTER_OTLP_HEADERS (README, "Send OpenTelemetry traces").
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, NodeTracerProvider } from '@opentelemetry/sdk-trace-node';

export function startTracing(serviceName: string): NodeTracerProvider {
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ 'service.name': serviceName }),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
  });
  provider.register();
  return provider;
}

/** Runs a client's agent; exports what is left and exits 0, or prints the failure and exits 1. */
export function runToEnd(agent: () => Promise<unknown>, flush: () => Promise<void>): void {
  agent()
    .then(flush)
    .then(
      () => process.exit(0),
      (error: unknown) => {
        console.error(error);
        process.exit(1);
      },
    );
}
