// Projects of an organization and the API keys through which their agents report.
import { generateApiKey, hashApiKey } from '../auth/api-keys';
import type { PostgresStore } from '../db/postgres';
import { conflict, notFound } from '../errors';
import { toNullableTimestamp, toTimestamp } from '../http/schemas';
import { uuidv7 } from '../ids';
import * as q from './queries';

interface ProjectRow {
  id: string;
  org_id: string;
  name: string;
  retention_days: number;
  created_at: Date;
}
interface ApiKeyRow {
  id: string;
  name: string;
  prefix: string;
  created_at: Date;
  last_used_at: Date | null;
}

const toProject = (row: ProjectRow) => ({
  id: row.id,
  org_id: row.org_id,
  name: row.name,
  retention_days: row.retention_days,
  created_at: toTimestamp(row.created_at),
});

/** What a PATCH may change; a field left out keeps its value. */
export interface ProjectChanges {
  name?: string;
  retention_days?: number;
}
const toApiKey = (row: ApiKeyRow) => ({
  id: row.id,
  name: row.name,
  prefix: row.prefix,
  created_at: toTimestamp(row.created_at),
  last_used_at: toNullableTimestamp(row.last_used_at),
});

export interface ProjectServiceDependencies {
  pg: PostgresStore;
  /** Told of each key revoked or deleted with its project: it stops working at once on this instance. */
  keyRevoked: (keyHash: string) => void;
  /** Told when a project's retention changed: its reads start from the new cutoff at once on this instance. */
  retentionChanged: (projectId: string) => void;
}

export function projectService({ pg, keyRevoked, retentionChanged }: ProjectServiceDependencies) {
  async function requireProject(orgId: string, projectId: string) {
    const [row] = await pg.query<ProjectRow>(q.SELECT_PROJECT, [orgId, projectId]);
    if (!row) throw notFound('project');
    return toProject(row);
  }

  return {
    requireProject,
    async create(orgId: string, name: string, retentionDays: number) {
      const [row] = await pg.query<ProjectRow>(q.INSERT_PROJECT, [uuidv7(), orgId, name, retentionDays]);
      if (!row) throw conflict('a project with that name already exists in this organization');
      return toProject(row);
    },
    async list(orgId: string) {
      return (await pg.query<ProjectRow>(q.SELECT_PROJECTS, [orgId])).map(toProject);
    },
    async update(orgId: string, projectId: string, changes: ProjectChanges) {
      try {
        const [row] = await pg.query<ProjectRow>(q.UPDATE_PROJECT, [
          orgId,
          projectId,
          changes.name ?? null,
          changes.retention_days ?? null,
        ]);
        if (!row) throw notFound('project');
        if (changes.retention_days !== undefined) retentionChanged(projectId);
        return toProject(row);
      } catch (error) {
        if ((error as { code?: string }).code === '23505')
          throw conflict('a project with that name already exists in this organization');
        throw error;
      }
    },
    async remove(orgId: string, projectId: string) {
      const keys = await pg.query<{ key_hash: string }>(q.SELECT_PROJECT_KEY_HASHES, [orgId, projectId]);
      const deleted = await pg.query(q.DELETE_PROJECT, [orgId, projectId]);
      if (deleted.length === 0) throw notFound('project');
      // Its keys went with it; like a revoked key, each stops working at once in this instance.
      for (const key of keys) keyRevoked(key.key_hash);
    },
    async createKey(orgId: string, projectId: string, name: string) {
      await requireProject(orgId, projectId);
      const key = generateApiKey();
      const [row] = await pg.query<ApiKeyRow>(q.INSERT_API_KEY, [
        uuidv7(),
        projectId,
        name,
        hashApiKey(key),
        key.slice(0, 8),
      ]);
      return { ...toApiKey(row), key };
    },
    async listKeys(orgId: string, projectId: string) {
      await requireProject(orgId, projectId);
      return (await pg.query<ApiKeyRow>(q.SELECT_API_KEYS, [projectId])).map(toApiKey);
    },
    async revokeKey(orgId: string, projectId: string, keyId: string) {
      await requireProject(orgId, projectId);
      const [row] = await pg.query<{ key_hash: string }>(q.REVOKE_API_KEY, [projectId, keyId]);
      if (!row) throw notFound('API key');
      keyRevoked(row.key_hash);
    },
  };
}

export type ProjectService = ReturnType<typeof projectService>;
