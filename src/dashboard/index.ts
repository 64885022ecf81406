// The dashboard capability, assembled: the express shell that serves what no declared route does — the
// dashboard's page and assets — and leaves the rest to the request path's 404.
import express from 'express';
import type { Config } from '../config';
import type { Authenticator } from '../http/route';
import { dashboardRouter } from './serve';

export interface DashboardDependencies {
  /** Whether a request's session cookie is live, told to the page (serve.ts). */
  authenticator: Authenticator;
  /** The deployment's loop thresholds, told to the page: a run's page says which loop rule its steps match. */
  config: Pick<Config, 'loopThresholds'>;
}

export function createDashboard({ authenticator, config }: DashboardDependencies) {
  const shell = express();
  shell.disable('x-powered-by');
  const hasSession = (req: Parameters<Authenticator['session']>[0]) =>
    authenticator.session(req).then(
      () => true,
      () => false,
    );
  shell.use(dashboardRouter(hasSession, { loopThresholds: config.loopThresholds }));
  return { shell };
}
