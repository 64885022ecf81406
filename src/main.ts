// Start-up: configuration, stores, migrations, the HTTP server, background jobs, and a graceful stop.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp } from './app';
import { resolveJwtSecret } from './auth/secret';
import { systemClock } from './clock';
import { ConfigError, loadConfig, type Config } from './config';
import { closeStores, openStores } from './db/stores';
import { runEvery } from './background';
import { startAbandonJob } from './ingest/abandon';
import { createLogger } from './logger';

const OTLP_SWEEP_INTERVAL_MS = 2000;
const RETENTION_INTERVAL_MS = 3_600_000;
// While a stop waits for the connections to close, idle ones are closed this often.
const IDLE_SWEEP_MS = 50;
// The embedded engines close in milliseconds; past this a stop exits without them (their logs recover them).
const STORES_CLOSE_MS = 500;

function readConfig(): Config {
  try {
    return loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }
}

/**
 * Stops accepting connections and resolves once every open one is closed. Node closes the idle keep-alive
 * connections at once; one busy at that moment would stay open for the keep-alive timeout (5 s) after its answer,
 * taking more requests: those are answered with `Connection: close`, and connections are closed once they fall idle.
 */
function closeServer(server: Server): Promise<void> {
  server.prependListener('request', (_req, res) => res.setHeader('Connection', 'close'));
  const sweep = setInterval(() => server.closeIdleConnections(), IDLE_SWEEP_MS);
  return new Promise<void>((resolve) => server.close(() => resolve())).finally(() => clearInterval(sweep));
}

/** Whether `work` settled within `ms`; past that it is no longer waited for. */
async function settlesWithin(ms: number, work: Promise<unknown>): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([work.then(() => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

async function main(): Promise<void> {
  const config = readConfig();
  const log = createLogger(config);
  const stores = await openStores(config, log);
  const jwtSecret = resolveJwtSecret(config.jwtSecret, config.dataDir);
  const { app, ingest, otlp, otlpDecoders, notifier, alerts, retentionDeletion } = createApp({
    config,
    stores,
    clock: systemClock,
    log,
    jwtSecret,
  });
  // The port bound, which is the system's choice with PORT=0 (test/support/child-service.ts reads it from this line).
  const server: Server = app.listen(config.port, undefined, () =>
    log.info({ port: (server.address() as AddressInfo).port, dataDir: config.dataDir }, 'runwatch listening'),
  );
  // Background jobs; their state is in the stores, so a restart picks up where they left off.
  const stopAbandonJob = startAbandonJob({
    pass: () => ingest.abandonStaleRuns(config.runAbandonAfterSeconds),
    log,
    intervalSeconds: config.abandonCheckIntervalSeconds,
  });
  // Spans of traces still open at the last stop are reloaded ahead of the first export; assembled traces leave
  // memory once quiet, and traces quiet for the assembly window are settled.
  otlp
    .start()
    .catch((error: unknown) =>
      log.warn({ err: error }, 'otlp: open traces not reloaded yet; the first export retries'),
    );
  const stopOtlpSweeper = runEvery(OTLP_SWEEP_INTERVAL_MS, otlp.sweep, (error) =>
    log.warn({ err: error }, 'otlp: sweeping traces failed; retrying'),
  );
  // Alert notifications queued in Postgres (alert_deliveries) are sent from here.
  const stopNotifier = notifier.startNotifier({ intervalMs: 1000 });
  // Aggregate alert rules are evaluated every ALERT_EVAL_INTERVAL seconds (one instance at a time, by advisory lock).
  const stopAlertEvaluator = alerts.startEvaluator({
    intervalSeconds: config.alertEvalIntervalSeconds,
    clock: systemClock,
  });
  // Runs past their project's retention are deleted hourly, so within the day the contract allows.
  const stopRetention = runEvery(RETENTION_INTERVAL_MS, retentionDeletion.run, (error) =>
    log.warn({ err: error }, 'retention: deleting expired runs failed; retrying'),
  );

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    const startedAt = Date.now();
    log.info({ signal }, 'shutting down');
    // The jobs start no new pass and finish the one running; the server takes no new connection and answers the
    // requests in flight (OTLP exports with the decoders), then the ingest log's last flush; then the stores close.
    // Past the grace period what is left is cut, and nothing acknowledged is lost: a request in flight was not
    // answered yet, a notification being sent comes back when its claim's lease ends, and acknowledged writes not
    // yet in ClickHouse stay in the ingest log for the next start.
    const drain = Promise.all([
      stopAbandonJob(),
      stopOtlpSweeper(),
      stopNotifier(),
      stopAlertEvaluator(),
      stopRetention(),
      closeServer(server).then(() => Promise.all([otlpDecoders.close(), ingest.drain().then(alerts.idle)])),
    ]);
    const drained = await settlesWithin(
      config.shutdownGraceMs,
      drain.catch((error: unknown) => log.error({ err: error }, 'stop: draining failed')),
    );
    if (!drained) log.warn({ graceMs: config.shutdownGraceMs }, 'stop: the grace period is over; cutting what is left');
    server.closeAllConnections();
    await settlesWithin(STORES_CLOSE_MS, closeStores(stores));
    log.info({ ms: Date.now() - startedAt }, 'stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

main().catch((error) => {
  process.stderr.write(`runwatch failed to start: ${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
