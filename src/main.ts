// Start-up: configuration, stores, migrations, the HTTP server, background jobs, and a graceful stop.
import './threadpool';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp } from './app';
import { resolveJwtSecret } from './auth/secret';
import { systemClock, within } from './clock';
import { ConfigError, loadConfig, type Config } from './config';
import { closeStores, openStores } from './db/stores';
import { startJobs } from './jobs';
import { createLogger } from './logger';
import { releaseStartupPages } from './startup-pages';

// While a stop waits for the connections to close, idle ones are closed this often.
const IDLE_SWEEP_MS = 50;
// How long a stop goes on accepting and answering (with `Connection: close`) before it stops listening, at most: the
// requests clients sent just before the signal are then read and answered, not reset (closeServer).
const LINGER_MS = 250;
// How long after listening the pages touched only by the start leave the resident set (src/startup-pages.ts).
const RELEASE_STARTUP_PAGES_AFTER_MS = 5000;
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
 * Answers what is in flight, then stops, so that no request a client sent before the signal is reset:
 * - first, for LINGER_MS, the server goes on accepting and reading, and answers every request with
 *   `Connection: close`. A request sent just before the signal may still be in the listening socket's accept queue,
 *   or unread on an idle keep-alive connection: closing either at once resets it (ECONNRESET).
 * - then it stops listening and closes the idle connections, sweeping them as the busy ones fall idle after their
 *   last answer; it resolves once every connection is closed.
 */
async function closeServer(server: Server, lingerMs: number): Promise<void> {
  server.prependListener('request', (_req, res) => res.setHeader('Connection', 'close'));
  await new Promise((resolve) => setTimeout(resolve, lingerMs));
  // Then in the loop's check phase, which comes after its poll phase: what waits to be accepted or read is, first.
  await new Promise((resolve) => setImmediate(resolve));
  const sweep = setInterval(() => server.closeIdleConnections(), IDLE_SWEEP_MS);
  await new Promise<void>((resolve) => server.close(() => resolve())).finally(() => clearInterval(sweep));
}

/** Whether `work` settled within `ms`; past that it is no longer waited for. */
const settlesWithin = (ms: number, work: Promise<unknown>) =>
  within(
    ms,
    work.then(() => true),
    false,
  );

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
  const server: Server = app.listen(config.port, undefined, () => {
    log.info({ port: (server.address() as AddressInfo).port, dataDir: config.dataDir }, 'runwatch listening');
    // Once the start's own work is done: the jobs' first passes and the reload of open traces touch code once too.
    setTimeout(
      () => releaseStartupPages(log).catch((error: unknown) => log.warn({ err: error }, 'memory: start-up pages kept')),
      RELEASE_STARTUP_PAGES_AFTER_MS,
    ).unref();
  });
  // Spans of traces still open at the last stop are reloaded ahead of the first export; assembled traces leave
  // memory once quiet, and traces quiet for the assembly window are settled (the OTLP sweep job).
  otlp
    .start()
    .catch((error: unknown) =>
      log.warn({ err: error }, 'otlp: open traces not reloaded yet; the first export retries'),
    );
  // Background jobs; their state is in the stores, so a restart picks up where they left off. Those that are the
  // deployment's run once per round whatever the number of instances (src/jobs.ts).
  const stopJobs = startJobs({
    service: { ingest, otlp, notifier, alerts, retentionDeletion },
    pg: stores.pg,
    config,
    clock: systemClock,
    log,
  });

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
      stopJobs(),
      closeServer(server, Math.min(LINGER_MS, config.shutdownGraceMs / 4)).then(() =>
        Promise.all([otlpDecoders.close(), ingest.drain().then(alerts.idle)]),
      ),
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
