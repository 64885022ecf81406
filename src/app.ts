// Assembles the HTTP service: plumbing, every capability's routes, the OpenAPI document and error handling.
import { createServer, type RequestListener, type Server } from 'node:http';
import express from 'express';
import pinoHttp from 'pino-http';
import type { Logger } from 'pino';
import { z } from 'zod';
import { createAuthenticator } from './auth/authenticator';
import { authRoutes } from './auth/routes';
import { authService } from './auth/service';
import type { Clock } from './clock';
import type { Config } from './config';
import type { Stores } from './db/stores';
import { handleErrors, handleNotFound } from './http/errors';
import { healthRoutes } from './http/health';
import { buildOpenApiDocument } from './http/openapi';
import { answerClientError, leanListener } from './http/lean-server';
import { assignRequestId, logLevelFor } from './http/request-log';
import { defineRoute, mountRoutes, type RouteDefinition } from './http/route';
import { organizationRoutes } from './orgs/routes';
import { projectRoutes } from './projects/routes';
import { projectService } from './projects/service';
import { ingestRoutes } from './ingest/routes';
import { ingestService } from './ingest/service';
import { directWriter, ingestReadiness, openLogWriter } from './ingest/writer';
import { otlpRoutes } from './otlp/routes';
import { MappingPool } from './otlp/mapping-pool';
import { otlpService } from './otlp/service';
import { runRoutes } from './runs/routes';
import { runStore } from './runs/store';
import { loadPriceTable } from './pricing/prices';
import { reportRoutes } from './reports/routes';
import { retentionCutoffs } from './retention/cutoffs';
import { retentionJob } from './retention/job';
import { createNotifier } from './alerts/notify/worker';
import { createAlerts } from './alerts';
import { dashboardRouter } from './dashboard/serve';

export interface AppDependencies {
  config: Config;
  stores: Stores;
  clock: Clock;
  log: Logger;
  jwtSecret: string;
}

function requestLogger(log: Logger) {
  return pinoHttp({
    logger: log,
    genReqId: assignRequestId,
    customLogLevel: (_req, res, error) => logLevelFor(res.statusCode, error !== undefined, 'info'),
    serializers: {
      req: (req) => ({ id: req.id, method: req.method, url: req.url }),
      res: (res) => ({ statusCode: res.statusCode }),
    },
  });
}

function openApiRoute(routes: RouteDefinition[]) {
  let document: ReturnType<typeof buildOpenApiDocument> | undefined;
  return defineRoute({
    method: 'get',
    path: '/openapi.json',
    operationId: 'getOpenApiDocument',
    tag: 'Meta',
    summary: 'This OpenAPI 3.1 document',
    auth: { kind: 'public' },
    response: z.record(z.string(), z.unknown()),
    // The routes are fixed once the app is built: the document is built on first request, then served as is.
    handler: async () => (document ??= buildOpenApiDocument(routes)),
  });
}

/** The service's request listener, which starts its own HTTP server as express's app.listen does. */
function listenable(listener: RequestListener) {
  return Object.assign(listener, {
    listen: (port: number, host?: string, onListening?: () => void): Server =>
      createServer(listener).on('clientError', answerClientError).listen(port, host, onListening),
  });
}

export function createApp({ config, stores, clock, log, jwtSecret }: AppDependencies) {
  const { authenticator, forgetApiKey } = createAuthenticator(stores.pg, clock, jwtSecret);
  const auth = authService(stores.pg, clock, {
    jwtSecret,
    sessionTtlSeconds: config.sessionTtlSeconds,
    loginFailuresPerEmail: config.loginFailuresPerEmail,
  });
  const retention = retentionCutoffs(stores.pg, clock);
  const projects = projectService(stores.pg, forgetApiKey, retention.forget);
  const runs = runStore(stores.ch);
  const prices = loadPriceTable(config.priceTableFile);
  const writer = config.ingestLog
    ? openLogWriter({
        ch: stores.ch,
        log,
        ...config.ingestLog,
        flushMaxRows: config.ingestFlushMaxRows,
        flushIntervalMs: config.ingestFlushIntervalMs,
      })
    : directWriter(stores.ch, config.ingestFlushMaxRows);
  // Reads of runs wait for the flush of what this instance acknowledged for their project (read-your-writes).
  const { flushed } = writer;
  const alerts = createAlerts({
    stores,
    clock,
    log,
    queryLimits: config.reportLimits,
    denyPrivateUrls: config.webhookDenyPrivate,
    flushed,
    retainedFrom: retention.retainedFrom,
  });
  const ingest = ingestService({
    ch: stores.ch,
    runs,
    writer,
    clock,
    log,
    loopThresholds: config.loopThresholds,
    prices,
    runAbandonAfterSeconds: config.runAbandonAfterSeconds,
    missRetryMs: config.ingestMissRetryMs,
    events: alerts.events,
  });

  const otlpDecoders = new MappingPool(config.otlpDecodeWorkers, log);
  const otlp = otlpService({
    ch: stores.ch,
    ingest,
    writer,
    clock,
    log,
    prices,
    loopThresholds: config.loopThresholds,
    assemblySeconds: config.otlpAssemblySeconds,
  });

  const routes: RouteDefinition[] = [
    ...healthRoutes(stores, () => ingestReadiness(writer.backlog()), config),
    ...authRoutes(auth, clock, config.authRateLimitPerMinute),
    ...organizationRoutes(stores.pg),
    ...projectRoutes(projects),
    ...ingestRoutes(ingest, config.ingestBodyLimitBytes),
    ...otlpRoutes(otlp, otlpDecoders, clock, config.ingestBodyLimitBytes),
    ...runRoutes(runs, flushed),
    ...reportRoutes(stores.ch, clock, config.reportLimits, flushed, retention.retainedFrom),
    ...alerts.routes,
  ];
  routes.push(openApiRoute(routes));

  const mountOptions = {
    authenticator,
    bodyLimitBytes: config.bodyLimitBytes,
    validateResponses: process.env.NODE_ENV === 'test',
  };
  const expressApp = express();
  expressApp.disable('x-powered-by');
  expressApp.set('trust proxy', config.trustProxy);
  expressApp.use(requestLogger(log));
  mountRoutes(expressApp, routes, mountOptions);
  expressApp.use(
    dashboardRouter((req) =>
      authenticator.session(req).then(
        () => true,
        () => false,
      ),
    ),
  );
  expressApp.use(handleNotFound);
  expressApp.use(handleErrors);
  // Routes declared lean (ingest) are served without express, every other request by it.
  const app = listenable(leanListener(routes, { ...mountOptions, log, fallback: expressApp }));
  // Sends queued alert notifications; main.ts runs it on an interval, tests call notifier.deliverDue(now).
  const notifier = createNotifier({ pg: stores.pg, clock, log, config });
  // Deletes runs past their project's retention; main.ts runs it hourly, tests call retentionJob.run().
  const retentionDeletion = retentionJob({
    pg: stores.pg,
    ch: stores.ch,
    clock,
    log: log.child({ component: 'retention' }),
  });
  return { app, routes, ingest, otlp, otlpDecoders, writer, notifier, alerts, retentionDeletion };
}
