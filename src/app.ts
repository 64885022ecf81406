// Wires the service: every capability created with what it needs of the others, their routes in one list (with
// the OpenAPI document's), served by the one request path.
import type { RequestListener, Server } from 'node:http';
import type { Logger } from 'pino';
import { z } from 'zod';
import { createAlerts } from './alerts';
import { createAuth } from './auth';
import type { Clock } from './clock';
import type { Config } from './config';
import type { Stores } from './db/stores';
import { asRead } from './db/read-scope';
import { ByteBudget, Lane } from './http/admission';
import { createBoundedServer, type ConnectionLimits } from './http/connections';
import { healthRoutes } from './http/health';
import { buildOpenApiDocument } from './http/openapi';
import { trustedProxies } from './http/proxies';
import { defineRoute, type RouteDefinition } from './http/route';
import { answerClientError, createRequestListener } from './http/server';
import { boundedBarrier, createIngest, openRunWriter } from './ingest';
import { createOrgs } from './orgs';
import { createOtlp } from './otlp';
import { createPricing } from './pricing';
import { createProjects } from './projects';
import { createReports } from './reports';
import { createRetention } from './retention';
import { createRuns } from './runs';
import { createUsage } from './usage';
import { createScoreNames, createScores } from './scores';
import { createSessions } from './sessions';
import { createDashboard } from './dashboard';

export interface AppDependencies {
  config: Config;
  stores: Stores;
  clock: Clock;
  log: Logger;
  jwtSecret: string;
}

function openApiRoute(routes: RouteDefinition[]) {
  let document: ReturnType<typeof buildOpenApiDocument> | undefined;
  // Route declarations are a table: the route, then its checks and schemas, then its handler, a line or two each.
  // prettier-ignore
  return defineRoute({
    method: 'get', path: '/openapi.json', operationId: 'getOpenApiDocument', tag: 'Meta',
    summary: 'This OpenAPI 3.1 document',
    auth: { kind: 'public' }, response: z.record(z.string(), z.unknown()),
    // The routes are fixed once the app is built: the document is built on first request, then served as is.
    handler: async () => (document ??= buildOpenApiDocument(routes)),
  });
}

/**
 * The service's request listener, and `listen`: its HTTP server, its connections bounded, node's parser errors
 * answered in the error body.
 */
function listenable(listener: RequestListener, limits: ConnectionLimits) {
  return Object.assign(listener, {
    listen: (port: number, host?: string, onListening?: () => void): Server =>
      createBoundedServer(listener, limits).on('clientError', answerClientError).listen(port, host, onListening),
  });
}

/** Reads (reports, run lists and views, the dashboard's API) and ingest (REST, OTLP) each wait in their own lane. */
function lanesOf(config: Config, ingest: RouteDefinition[], reads: RouteDefinition[]) {
  const ingestLane = new Lane('ingest', config.lanes.ingest);
  // A read is answered within READ_TIMEOUT_MS of its arrival, its statements at a lower priority than ingest's.
  const { timeoutMs, threadNice } = config.read;
  const readLane = new Lane('read', config.lanes.read, (arrivedAt, work) =>
    asRead(arrivedAt + timeoutMs, threadNice, work),
  );
  const lanes = new Map<RouteDefinition, Lane>([
    ...ingest.map((route) => [route, ingestLane] as const),
    ...reads.filter((route) => route.method === 'get').map((route) => [route, readLane] as const),
  ]);
  return (route: RouteDefinition) => lanes.get(route);
}

export function createApp({ config, stores, clock, log, jwtSecret }: AppDependencies) {
  const { pg, ch } = stores;
  const orgs = createOrgs({ pg });
  const auth = createAuth({ pg, clock, jwtSecret, organizations: orgs, config });
  // Requests are authenticated through it: every declared route's caller, and the dashboard's.
  const { authenticator } = auth;
  const retention = createRetention({ pg, ch, clock, log });
  const projects = createProjects({
    pg,
    keyRevoked: auth.forgetApiKey,
    retentionChanged: retention.retentionChanged,
  });
  const { prices } = createPricing({ config });
  // Reads of runs wait for the flush of what this instance acknowledged for their project (read-your-writes).
  // They wait for it at most READ_FLUSH_WAIT_MS, then get 503: a busy flush does not hold reads (docs/limits.md).
  const writer = openRunWriter({ ch, pg, log, config });
  const flushed = boundedBarrier(writer.flushed, config.readFlushWaitMs);
  const runs = createRuns({ ch, flushed, retainedFrom: retention.retainedFrom });
  const reports = createReports({ ch, clock, flushed, retainedFrom: retention.retainedFrom, config });
  const usage = createUsage({ ch, clock, flushed, retainedFrom: retention.retainedFrom, config });
  const sessions = createSessions({ ch, clock, flushed, retainedFrom: retention.retainedFrom, config });
  // Score rules read score means, from the scores capability, which is assembled below (it records scores through
  // ingest, which tells alerts of finished runs): by the time a rule is evaluated or previewed, it is there.
  const alertSignals = {
    readSignals: reports.readSignals,
    readSignal: reports.readSignal,
    readScoreMean: (...args: Parameters<typeof scores.readScoreMean>) => scores.readScoreMean(...args),
  };
  const alerts = createAlerts({ pg, clock, log, signals: alertSignals, config });
  const scoreNames = createScoreNames({ pg, ch });
  const ingest = createIngest({
    ch,
    writer,
    runs: runs.store,
    clock,
    log,
    prices,
    events: alerts.events,
    batchScores: scoreNames.batchScores,
    storedScores: scoreNames.storedScores,
    config,
  });
  const scores = createScores({
    ch,
    clock,
    names: scoreNames,
    ingest,
    flushed,
    retainedFrom: retention.retainedFrom,
    findStoredRun: (key) => runs.store.findLatest(key.projectId, key.id, key.timestamp),
    config,
  });
  const otlp = createOtlp({ ch, ingest, writer, clock, log, prices, config });

  const routes: RouteDefinition[] = [
    ...healthRoutes(stores, ingest.readiness, config),
    ...auth.routes,
    ...orgs.routes,
    ...projects.routes,
    ...ingest.routes,
    ...otlp.routes,
    // Before runs' /agent/runs/:runID, which would take /agent/runs/export for a run's id.
    ...reports.routes,
    ...runs.routes,
    ...usage.routes,
    ...sessions.routes,
    ...alerts.routes,
    ...scores.routes,
  ];
  routes.push(openApiRoute(routes));

  // What no declared route serves goes to the dashboard's express shell: its page and assets, else a 404.
  const dashboard = createDashboard({ authenticator, config });
  const app = listenable(
    createRequestListener(routes, {
      authenticator,
      proxies: trustedProxies(config.trustProxy),
      bodyLimitBytes: config.bodyLimitBytes,
      validateResponses: process.env.NODE_ENV === 'test',
      log,
      fallback: dashboard.shell,
      laneOf: lanesOf(
        config,
        [...ingest.routes, ...otlp.routes, ...scores.routes.filter((route) => route.auth.kind === 'apiKey')],
        [...runs.routes, ...reports.routes, ...usage.routes, ...sessions.routes, ...scores.routes],
      ),
      bodyBudget: new ByteBudget(config.requestBytesInFlight),
    }),
    config.connections,
  );
  // What main.ts runs (the server, background jobs, shutdown) and tests drive.
  return {
    app,
    routes,
    writer,
    ingest,
    otlp,
    otlpDecoders: otlp.decoders,
    alerts,
    scores,
    notifier: alerts.notifier,
    retentionDeletion: retention.deletion,
  };
}
