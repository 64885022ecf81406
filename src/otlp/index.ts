// The OTLP capability, assembled: the trace export endpoint, its decoding workers, and the assembly of traces into
// runs, recorded through ingest.
import type { Config } from '../config';
import { MappingPool } from './mapping-pool';
import { otlpRoutes } from './routes';
import { otlpService, type OtlpServiceDependencies } from './service';

export interface OtlpDependencies extends Omit<OtlpServiceDependencies, 'loopThresholds' | 'assemblySeconds'> {
  config: Pick<
    Config,
    'loopThresholds' | 'otlpAssemblySeconds' | 'otlpDecodeWorkers' | 'otlpWorkerHeapMb' | 'ingestBodyLimitBytes'
  >;
}

export function createOtlp({ config, ...dependencies }: OtlpDependencies) {
  const decoders = new MappingPool(config.otlpDecodeWorkers, dependencies.log, config.otlpWorkerHeapMb);
  const service = otlpService({
    ...dependencies,
    loopThresholds: config.loopThresholds,
    assemblySeconds: config.otlpAssemblySeconds,
  });
  return {
    routes: otlpRoutes(service, decoders, dependencies.clock, config.ingestBodyLimitBytes),
    /** The worker threads that decode exports; closed at shutdown, once the requests in flight are answered. */
    decoders,
    /** Loads the open traces ahead of the first export (at start-up). */
    start: service.start,
    /** Settles the traces quiet for the assembly window; main.ts runs it every few seconds. */
    sweep: service.sweep,
  };
}
