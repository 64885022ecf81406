// The background jobs of an instance. Those whose work is the deployment's (alert evaluation, retention deletion,
// the abandon job) run a round only under their lease in Postgres, so several instances on one Postgres and one
// ClickHouse run each round once; notification delivery runs everywhere, each instance claiming its own rows
// (SKIP LOCKED); the OTLP sweep is this instance's own (the traces it assembles are in its memory).
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { createApp } from './app';
import { onceAcrossInstances, runEvery } from './background';
import type { Clock } from './clock';
import type { Config } from './config';
import { leasesIn } from './db/leases';
import type { PostgresStore } from './db/postgres';
import { startAbandonJob } from './ingest/abandon';

const OTLP_SWEEP_INTERVAL_MS = 2000;
const NOTIFIER_INTERVAL_MS = 1000;
const RETENTION_INTERVAL_MS = 3_600_000;

/**
 * What the leases are scoped by: the ClickHouse database the jobs work on (a server's database, whichever node an
 * instance reaches it through; or an embedded engine's directory on its host). Instances that share a Postgres but
 * not a ClickHouse (each its own embedded engine) are separate deployments, each running its own jobs.
 */
export function deploymentOf(config: Pick<Config, 'clickhouse' | 'dataDir'>): string {
  return config.clickhouse ? `clickhouse:${config.clickhouse.database}` : `embedded:${hostname()}:${config.dataDir}`;
}

type Service = Pick<ReturnType<typeof createApp>, 'ingest' | 'otlp' | 'notifier' | 'alerts' | 'retentionDeletion'>;

export interface JobsDependencies {
  service: Service;
  pg: PostgresStore;
  config: Pick<
    Config,
    'runAbandonAfterSeconds' | 'abandonCheckIntervalSeconds' | 'alertEvalIntervalSeconds' | 'clickhouse' | 'dataDir'
  >;
  clock: Clock;
  log: Logger;
  /** Alerts of this project only (tests: test files share one Postgres database, each its own rules). */
  onlyProject?: string;
}

/** Starts every job; returns the function that stops them and waits for the rounds in progress. */
export function startJobs({ service, pg, config, clock, log, onlyProject }: JobsDependencies): () => Promise<void> {
  const { ingest, otlp, notifier, alerts, retentionDeletion } = service;
  const leases = leasesIn(pg, deploymentOf(config));
  const abandonMs = config.abandonCheckIntervalSeconds * 1000;
  const stops = [
    startAbandonJob({
      pass: onceAcrossInstances(leases, 'abandon', abandonMs, () =>
        ingest.abandonStaleRuns(config.runAbandonAfterSeconds),
      ),
      log,
      intervalSeconds: config.abandonCheckIntervalSeconds,
    }),
    runEvery(OTLP_SWEEP_INTERVAL_MS, otlp.sweep, (error) =>
      log.warn({ err: error }, 'otlp: sweeping traces failed; retrying'),
    ),
    // Alert notifications queued in Postgres (alert_deliveries), claimed a batch at a time by whichever instance.
    notifier.startNotifier({
      intervalMs: NOTIFIER_INTERVAL_MS,
      scope: onlyProject ? { projectId: onlyProject } : undefined,
    }),
    alerts.startEvaluator({
      intervalSeconds: config.alertEvalIntervalSeconds,
      clock,
      leases,
      projectIds: onlyProject ? [onlyProject] : undefined,
    }),
    // Runs past their project's retention are deleted hourly, so within the day the contract allows.
    runEvery(
      RETENTION_INTERVAL_MS,
      onceAcrossInstances(leases, 'retention', RETENTION_INTERVAL_MS, retentionDeletion.run),
      (error) => log.warn({ err: error }, 'retention: deleting expired runs failed; retrying'),
    ),
  ];
  return async () => {
    await Promise.all(stops.map((stop) => stop()));
  };
}
