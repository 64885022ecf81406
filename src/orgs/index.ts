// The organizations capability, assembled: its endpoints, and what accounts use of it (registration creates a
// user's first organization; a profile lists them).
import type { PostgresStore } from '../db/postgres';
import { organizationRoutes } from './routes';
import { createOrganization, listOrganizationsOfUser, organizationService } from './service';

export interface OrgsDependencies {
  pg: PostgresStore;
}

export function createOrgs({ pg }: OrgsDependencies) {
  return {
    routes: organizationRoutes(organizationService(pg)),
    /** Creates an organization with its first admin, inside the caller's transaction. */
    createOrganization,
    listOrganizationsOfUser,
  };
}

export type Orgs = ReturnType<typeof createOrgs>;
