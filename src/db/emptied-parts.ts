// Parts of `runs` that a lightweight DELETE emptied. A DELETE that removes every row of a part leaves it without its
// projections (ClickHouse builds none for zero rows, even with lightweight_mutation_projection_mode = 'rebuild'), and
// a part without them never merges with its neighbours: "Parts have different projection sets". Every later part of
// the partition then merges only on its side of it, and a deleted project's or an expired month's parts stay on disk.
// Such a part holds no row a query can see, so it is dropped, which lets the partition merge again.
import { storeErrorCode, type ClickHouseStore } from './clickhouse';

const EMPTIED_CANDIDATES = `
  SELECT name FROM system.parts
  WHERE database = currentDatabase() AND table = {table:String} AND active
    AND has_lightweight_delete AND empty(projections)`;

// The candidates that still hold a row: those are kept (reads answer from their rows until a merge rebuilds them).
const PARTS_WITH_ROWS = (table: string) => `
  SELECT DISTINCT _part AS name FROM ${table} WHERE _part IN {parts:Array(String)}`;

const DROP_PART = (table: string) => `ALTER TABLE ${table} DROP PART {part:String}`;
// NO_SUCH_DATA_PART: another instance, after its own deletion, dropped the part first.
const NO_SUCH_DATA_PART = '232';

/**
 * Drops the parts of `table` that lightweight deletes emptied, and returns their names. Not on a sharded layout,
 * whose parts live on each shard apart (docs/scale-out.md). Such a part takes part in no merge, so it is still there
 * to drop unless another instance dropped it; any other failure is the store's, and the deletion that called this
 * is retried.
 */
export async function dropEmptiedParts(ch: ClickHouseStore, table: string): Promise<string[]> {
  if (ch.layout.topology === 'sharded') return [];
  const candidates = await ch.query<{ name: string }>({
    name: 'emptied-parts',
    sql: EMPTIED_CANDIDATES,
    params: { table },
  });
  if (candidates.length === 0) return [];
  const withRows = await ch.query<{ name: string }>({
    name: 'emptied-parts-rows',
    sql: PARTS_WITH_ROWS(table),
    params: { parts: candidates.map(({ name }) => name) },
  });
  const kept = new Set(withRows.map(({ name }) => name));
  const emptied = candidates.map(({ name }) => name).filter((name) => !kept.has(name));
  for (const part of emptied) {
    try {
      await ch.command(DROP_PART(table), { part });
    } catch (error) {
      if (storeErrorCode(error) !== NO_SUCH_DATA_PART) throw error;
    }
  }
  return emptied;
}
