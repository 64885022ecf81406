// The ingest capability, assembled: where acknowledged writes go (the ingest log, or direct inserts), the ingest
// endpoints, and what OTLP ingest, the abandon job and /readyz use of it.
import type { Logger } from 'pino';
import type { Config } from '../config';
import type { ClickHouseStore } from '../db/clickhouse';
import type { Sql } from '../db/postgres';
import { sessionNumbers } from '../sessions/numbers';
import { ingestRoutes } from './routes';
import { ingestService, type IngestServiceDependencies } from './service';
import { directWriter, ingestReadiness, openLogWriter, type RunWriter } from './writer';

export { boundedBarrier } from './writer';

export interface RunWriterDependencies {
  ch: ClickHouseStore;
  pg: Sql;
  log: Logger;
  config: Pick<Config, 'ingestLog' | 'ingestFlushMaxRows' | 'ingestFlushIntervalMs' | 'ingestFlushMaxRestMs'>;
}

/**
 * The ingest log (INGEST_LOG=on: acknowledged at fsync, flushed in bulk), else inserts straight into ClickHouse.
 * Every read of runs waits for its flushes (read-your-writes), so it is opened before the capabilities that read.
 */
export function openRunWriter({ ch, pg, log, config }: RunWriterDependencies): RunWriter {
  if (!config.ingestLog) return directWriter(ch, sessionNumbers(pg), config.ingestFlushMaxRows);
  return openLogWriter({
    ch,
    sessionNumbers: sessionNumbers(pg),
    log,
    ...config.ingestLog,
    flushMaxRows: config.ingestFlushMaxRows,
    flushIntervalMs: config.ingestFlushIntervalMs,
    flushMaxRestMs: config.ingestFlushMaxRestMs,
  });
}

export interface IngestDependencies extends Omit<
  IngestServiceDependencies,
  'loopThresholds' | 'runAbandonAfterSeconds' | 'missRetryMs'
> {
  config: Pick<
    Config,
    'loopThresholds' | 'runAbandonAfterSeconds' | 'ingestMissRetryMs' | 'ingestBodyLimitBytes' | 'readyMaxBacklog'
  >;
}

export function createIngest({ config, ...dependencies }: IngestDependencies) {
  const service = ingestService({
    ...dependencies,
    loopThresholds: config.loopThresholds,
    runAbandonAfterSeconds: config.runAbandonAfterSeconds,
    missRetryMs: config.ingestMissRetryMs,
  });
  const { writer } = dependencies;
  return {
    routes: ingestRoutes(service, config.ingestBodyLimitBytes),
    /** How OTLP ingest records the runs it assembles, through the ingest log. */
    recordAssembled: service.recordAssembled,
    /** A finished run as stored, with its steps (OTLP ingest, when a span arrives after its run was recorded). */
    finishedRun: service.finishedRun,
    /** A run in its latest state, as steps and finish calls find it (the scores of a run). */
    findRun: service.findRun,
    /** Scores, written through the ingest log. */
    writeScores: service.writeScores,
    /** One pass of the abandon job (main.ts runs it on an interval). */
    abandonStaleRuns: service.abandonStaleRuns,
    /** The backlog as /readyz shows it. */
    readiness: () => ingestReadiness(writer.backlog(), config.readyMaxBacklog),
    /** Flushes what it can and closes the log; used at shutdown. */
    drain: service.drain,
  };
}
