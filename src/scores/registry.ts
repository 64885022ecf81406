// The data type of each score name, per project (contract §10: a name keeps one type; a value of another → 400).
//
// Postgres holds it (score_names), so every instance of a deployment agrees: the first score of a name registers
// its type with INSERT … ON CONFLICT DO NOTHING, and whichever instance gets there first decides it. Each instance
// caches the names it has seen: a name's type never changes, so a cached entry is never stale, and a name already
// seen costs no round trip. The cache is dropped whole past MAX_CACHED_NAMES (names are few per project; this bounds a
// client that invents many). Registration comes before the score's write: a write that fails after it leaves the
// name registered with its type, as if a score had been recorded, which only the same type can then use.
import type { PostgresStore } from '../db/postgres';
import { invalidFields, type ErrorDetail } from '../errors';
import type { ScoreDataType } from './model';

const MAX_CACHED_NAMES = 100_000;

const REGISTER_NAMES = `
  INSERT INTO score_names (project_id, name, data_type)
  SELECT $1, name, data_type FROM unnest($2::text[], $3::text[]) AS sent(name, data_type)
  ON CONFLICT (project_id, name) DO NOTHING`;
const SELECT_NAMES = `SELECT name, data_type FROM score_names WHERE project_id = $1 AND name = ANY($2::text[])`;

/** A score as the registry checks it: its name, its value's type, and where it was sent (for the 400's details). */
export interface TypedScore {
  name: string;
  dataType: ScoreDataType;
  path: string;
}

export function scoreNameRegistry(pg: PostgresStore) {
  const cache = new Map<string, ScoreDataType>();
  const cacheKey = (projectId: string, name: string) => `${projectId}/${name}`;

  /** The registered types of some names, registering those new to the project with the type first sent. */
  async function typesOf(projectId: string, scores: readonly TypedScore[]): Promise<Map<string, ScoreDataType>> {
    const types = new Map<string, ScoreDataType>();
    const unknown = new Map<string, ScoreDataType>();
    for (const { name, dataType } of scores) {
      const cached = cache.get(cacheKey(projectId, name));
      if (cached) types.set(name, cached);
      else if (!unknown.has(name)) unknown.set(name, dataType);
    }
    if (unknown.size === 0) return types;
    await pg.query(REGISTER_NAMES, [projectId, [...unknown.keys()], [...unknown.values()]]);
    const rows = await pg.query<{ name: string; data_type: ScoreDataType }>(SELECT_NAMES, [
      projectId,
      [...unknown.keys()],
    ]);
    if (cache.size + rows.length > MAX_CACHED_NAMES) cache.clear();
    for (const row of rows) {
      cache.set(cacheKey(projectId, row.name), row.data_type);
      types.set(row.name, row.data_type);
    }
    return types;
  }

  return {
    /** The scores whose value is not of their name's type, as a 400's details (empty when all are). */
    async mismatches(projectId: string, scores: readonly TypedScore[]): Promise<ErrorDetail[]> {
      if (scores.length === 0) return [];
      const types = await typesOf(projectId, scores);
      return scores
        .filter(({ name, dataType }) => types.get(name) !== dataType)
        .map(({ name, path, dataType }) => ({
          path,
          message: `score ${name} is ${types.get(name)} in this project; a ${dataType} value is refused`,
        }));
    },

    /** Refuses (400) scores whose value is not of their name's type. */
    async check(projectId: string, scores: readonly TypedScore[]): Promise<void> {
      const details = await this.mismatches(projectId, scores);
      if (details.length > 0) throw invalidFields(details);
    },
  };
}

export type ScoreNameRegistry = ReturnType<typeof scoreNameRegistry>;
