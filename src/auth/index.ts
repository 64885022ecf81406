// The accounts capability, assembled: register, log in and out, who am I; and the authenticator every route's
// checks use (sessions and API keys).
import type { Clock } from '../clock';
import type { Config } from '../config';
import type { PostgresStore } from '../db/postgres';
import { createAuthenticator } from './authenticator';
import { authRoutes } from './routes';
import { authService, type UserOrganizations } from './service';

export interface AuthDependencies {
  pg: PostgresStore;
  clock: Clock;
  /** Signs and verifies session tokens. */
  jwtSecret: string;
  organizations: UserOrganizations;
  config: Pick<Config, 'sessionTtlSeconds' | 'loginThrottle' | 'authRateLimitPerMinute'>;
}

export function createAuth({ pg, clock, jwtSecret, organizations, config }: AuthDependencies) {
  const { authenticator, forgetApiKey } = createAuthenticator(pg, clock, jwtSecret);
  const settings = {
    jwtSecret,
    sessionTtlSeconds: config.sessionTtlSeconds,
    loginThrottle: config.loginThrottle,
  };
  const accounts = authService({ pg, clock, settings, organizations });
  return {
    routes: authRoutes(accounts, clock, config.authRateLimitPerMinute),
    /** Recognises callers, for the checks of every declared route and the dashboard's pages. */
    authenticator,
    /** A revoked API key stops working at once on this instance (projects call it when they revoke one). */
    forgetApiKey,
  };
}
