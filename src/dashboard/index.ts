// The dashboard capability, assembled: the express shell that serves what no declared route does — the
// dashboard's page and assets — and leaves the rest to the request path's 404.
import express from 'express';
import type { Authenticator } from '../http/route';
import { dashboardRouter } from './serve';

export interface DashboardDependencies {
  /** Whether a request's session cookie is live, told to the page (serve.ts). */
  authenticator: Authenticator;
}

export function createDashboard({ authenticator }: DashboardDependencies) {
  const shell = express();
  shell.disable('x-powered-by');
  const hasSession = (req: Parameters<Authenticator['session']>[0]) =>
    authenticator.session(req).then(
      () => true,
      () => false,
    );
  shell.use(dashboardRouter(hasSession));
  return { shell };
}
