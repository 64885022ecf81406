// Wires the service: every capability created with what it needs of the others, their routes in one list (with
// the OpenAPI document's), served by the one request path.
import { createServer, type RequestListener, type Server } from 'node:http';
import type { Logger } from 'pino';
import { z } from 'zod';
import { createAlerts } from './alerts';
import { createAuth } from './auth';
import type { Clock } from './clock';
import type { Config } from './config';
import type { Stores } from './db/stores';
import { healthRoutes } from './http/health';
import { buildOpenApiDocument } from './http/openapi';
import { trustedProxies } from './http/proxies';
import { defineRoute, type RouteDefinition } from './http/route';
import { answerClientError, createRequestListener } from './http/server';
import { createIngest, openRunWriter } from './ingest';
import { createOrgs } from './orgs';
import { createOtlp } from './otlp';
import { createPricing } from './pricing';
import { createProjects } from './projects';
import { createReports } from './reports';
import { createRetention } from './retention';
import { createRuns } from './runs';
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

/** The service's request listener, and `listen`: its HTTP server, node's parser errors answered in the error body. */
function listenable(listener: RequestListener) {
  return Object.assign(listener, {
    listen: (port: number, host?: string, onListening?: () => void): Server =>
      createServer(listener).on('clientError', answerClientError).listen(port, host, onListening),
  });
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
  const writer = openRunWriter({ ch, log, config });
  const runs = createRuns({ ch, flushed: writer.flushed });
  const reports = createReports({ ch, clock, flushed: writer.flushed, retainedFrom: retention.retainedFrom, config });
  const alerts = createAlerts({ pg, clock, log, signals: reports, config });
  const ingest = createIngest({ ch, writer, runs: runs.store, clock, log, prices, events: alerts.events, config });
  const otlp = createOtlp({ ch, ingest, writer, clock, log, prices, config });

  const routes: RouteDefinition[] = [
    ...healthRoutes(stores, ingest.readiness, config),
    ...auth.routes,
    ...orgs.routes,
    ...projects.routes,
    ...ingest.routes,
    ...otlp.routes,
    ...runs.routes,
    ...reports.routes,
    ...alerts.routes,
  ];
  routes.push(openApiRoute(routes));

  // What no declared route serves goes to the dashboard's express shell: its page and assets, else a 404.
  const dashboard = createDashboard({ authenticator });
  const app = listenable(
    createRequestListener(routes, {
      authenticator,
      proxies: trustedProxies(config.trustProxy),
      bodyLimitBytes: config.bodyLimitBytes,
      validateResponses: process.env.NODE_ENV === 'test',
      log,
      fallback: dashboard.shell,
    }),
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
    notifier: alerts.notifier,
    retentionDeletion: retention.deletion,
  };
}
