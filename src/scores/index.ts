// The scores capability, assembled: each project's score names and their types (which ingest's batch items need
// too), the score endpoints, and the score_mean reading alerts evaluate and preview.
import type { Clock } from '../clock';
import type { Config } from '../config';
import type { ClickHouseStore } from '../db/clickhouse';
import type { PostgresStore } from '../db/postgres';
import type { RetainedFrom } from '../retention/cutoffs';
import type { FlushBarrier, RunKey } from '../runs/store';
import { scoreNameRegistry, type ScoreNameRegistry } from './registry';
import { scoreRoutes } from './routes';
import { batchScoreRows, scoreService, storedScores, type ScoreIngest, type ScoreScope } from './service';

/**
 * What ingest needs of scores: the score names of every project with their types, how a batch item's scores become
 * rows, and the stored scores a new one may replace.
 */
export function createScoreNames({ pg, ch }: { pg: PostgresStore; ch: ClickHouseStore }) {
  const registry = scoreNameRegistry(pg);
  return { registry, batchScores: batchScoreRows(registry), storedScores: storedScores(ch) };
}

export interface ScoresDependencies {
  ch: ClickHouseStore;
  clock: Clock;
  names: { registry: ScoreNameRegistry };
  /** The run lookup of steps and finish calls, and the durable write through the ingest log. */
  ingest: ScoreIngest;
  /** Reads see every score this instance acknowledged for the project: they wait for its flush. */
  flushed: FlushBarrier;
  retainedFrom: RetainedFrom;
  /** A run as stored, for reads (after their flush barrier). */
  findStoredRun: (key: RunKey) => Promise<unknown>;
  config: Pick<Config, 'reportLimits'>;
}

export function createScores({
  ch,
  clock,
  names,
  ingest,
  flushed,
  retainedFrom,
  findStoredRun,
  config,
}: ScoresDependencies) {
  const service = scoreService({
    ch,
    clock,
    registry: names.registry,
    ingest,
    retainedFrom,
    limits: config.reportLimits,
  });
  return {
    routes: scoreRoutes(service, { flushed, findRun: findStoredRun, clock }),
    /** score_mean of one scope over [at − window, at), as of every score this instance acknowledged. */
    async readScoreMean(projectId: string, scope: ScoreScope, at: Date) {
      await flushed(projectId);
      return service.readScoreMean(projectId, scope, at);
    },
  };
}
