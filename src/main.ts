// Start-up: configuration, stores, migrations, the HTTP server, background jobs, and a graceful stop.
import type { Server } from 'node:http';
import { createApp } from './app';
import { resolveJwtSecret } from './auth/secret';
import { systemClock } from './clock';
import { ConfigError, loadConfig, type Config } from './config';
import { closeStores, openStores } from './db/stores';
import { startAbandonJob } from './ingest/abandon';
import { createLogger } from './logger';

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

async function main(): Promise<void> {
  const config = readConfig();
  const log = createLogger(config);
  const stores = await openStores(config, log);
  const jwtSecret = resolveJwtSecret(config.jwtSecret, config.dataDir);
  const { app, ingest, notifier, alerts } = createApp({ config, stores, clock: systemClock, log, jwtSecret });
  const server: Server = app.listen(config.port, undefined, () => log.info({ port: config.port, dataDir: config.dataDir }, 'runwatch listening'));
  // Background jobs; their state is in the stores, so a restart picks up where they left off.
  const stopAbandonJob = startAbandonJob({
    pass: () => ingest.abandonStaleRuns(config.runAbandonAfterSeconds), log, intervalSeconds: config.abandonCheckIntervalSeconds,
  });
  // Alert notifications queued in Postgres (alert_deliveries) are sent from here.
  const stopNotifier = notifier.startNotifier({ intervalMs: 1000 });
  // Aggregate alert rules are evaluated every ALERT_EVAL_INTERVAL seconds (one instance at a time, by advisory lock).
  const stopAlertEvaluator = alerts.startEvaluator({ intervalSeconds: config.alertEvalIntervalSeconds, clock: systemClock });

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down');
    // Stop taking requests, let those in flight finish, then close the stores they were writing to.
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await Promise.all([stopAbandonJob(), stopNotifier(), stopAlertEvaluator(), ingest.drain().then(alerts.idle)]);
    await closeStores(stores);
    log.info('stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

main().catch((error) => {
  process.stderr.write(`runwatch failed to start: ${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
