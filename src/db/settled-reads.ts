// Reads over settled data, answered again from memory while that data stays the same.
//
// A report's whole days and hours lie in the past: at 10 M runs their projections answer in ~10–25 ms a read, nearly
// all of it the engine's planning, and a dashboard asks for the same 30 days again and again. ClickHouse never
// changes a data part: an insert, a merge, a mutation (a lightweight DELETE too) each makes new parts under new
// names, and a part replaced never comes back. So the active parts of a table whose rows can fall in a time range
// say whether anything in that range may have changed: while they are the same parts, a read of that range answers
// the same. A result is kept under the parts seen just before it was read, and used when the parts are those again
// (seen after the asker's own writes were flushed). A part added or replaced while it was read makes its key one that
// never comes back: a replaced part is never active again, and an added one stays, or its rows go on in the parts made
// from it (a merge, a mutation), which lie in the range as it did. Only rows deleted for good within that moment —
// an emptied part dropped, rows merged away after a lightweight DELETE — could leave a kept result counting them, as
// a read at that moment does.
//
// A part is known by its name and the time it was written (a name can come back after its partition was dropped and
// the server restarted), and its rows' times by the partition key's min-max index: in seconds (so a part is taken as
// reaching a second past its last row), and as a 32-bit DateTime, which cannot hold times before 1970 or after 2106:
// a part whose bounds fall outside its own month (the table is partitioned by toYYYYMM of the time) is taken as
// reaching every time.
//
// Only where one server's parts are the data read: on a replicated or cloud deployment a read and the look at the
// parts may reach two replicas at different points of their replication, so no read is kept there (topology.ts).
import crypto from 'node:crypto';
import type { ClickHouseQuery } from './clickhouse';
import { onceInRead } from './read-scope';

/** The rows of a table (partitioned by toYYYYMM of their time) whose times lie in [from, to). */
export interface SettledRange {
  table: string;
  from: Date;
  to: Date;
}

interface Part {
  /** The part's name and when it was written. */
  id: string;
  /** Seconds since the epoch: the earliest and latest partition-key time of the part's rows, rounded down. */
  min: number;
  max: number;
  /** Whether min and max are the rows' times (they lie in the part's month), not a 32-bit DateTime's wrap. */
  bounded: boolean | number;
}

type Query = <Row>(query: ClickHouseQuery) => Promise<Row[]>;

/** What kept results hold at most, in characters of their JSON (a result kept takes two to three times that). */
const MAX_KEPT_CHARACTERS = 32 * 2 ** 20;

// One thread: a few rows, ~1.5 ms more than a SELECT 1 (a read of every table's parts cost 11 ms of CPU).
const ACTIVE_PARTS = `
  SELECT concat(name, '@', toString(toUnixTimestamp(modification_time))) AS id,
    toUnixTimestamp(min_time) AS min, toUnixTimestamp(max_time) AS max,
    toString(toYYYYMM(min_time)) = partition_id AND toString(toYYYYMM(max_time)) = partition_id AS bounded
  FROM system.parts
  WHERE database = currentDatabase() AND table = {table:String} AND active
  SETTINGS max_threads = 1`;

/** The parameters a statement names ({name:Type}): the others do not change its answer. */
function namedParams(read: ClickHouseQuery) {
  const named = new Set([...read.sql.matchAll(/\{(\w+):/g)].map(([, name]) => name));
  return Object.entries(read.params ?? {}).filter(([name]) => named.has(name));
}

export function settledReads(query: Query) {
  const kept = new Map<string, { rows: unknown[]; table: string; parts: readonly string[]; characters: number }>();
  let keptCharacters = 0;

  const drop = (key: string) => {
    keptCharacters -= kept.get(key)?.characters ?? 0;
    kept.delete(key);
  };

  /** Drops what was kept under a table's part that is no longer active: its key never comes back. */
  function dropReplaced(table: string, active: ReadonlySet<string>) {
    for (const [key, entry] of kept) {
      if (entry.table === table && entry.parts.some((part) => !active.has(part))) drop(key);
    }
  }

  /**
   * A table's active parts, seen once per dashboard read (its statements come after its flush barrier, so they see
   * its writes), each time outside one.
   */
  const activeParts = (table: string) =>
    onceInRead(`settled-reads:${table}`, async () => {
      const parts = await query<Part>({ name: 'settled.parts', sql: ACTIVE_PARTS, params: { table } });
      dropReplaced(table, new Set(parts.map((part) => part.id)));
      return parts;
    });

  /** The parts whose rows can lie in the range. */
  const partsIn = (parts: readonly Part[], { from, to }: SettledRange) =>
    parts
      .filter((part) => !part.bounded || (part.min * 1000 < to.getTime() && (part.max + 1) * 1000 > from.getTime()))
      .map((part) => part.id)
      .sort();

  function keep(key: string, rows: unknown[], table: string, parts: readonly string[]) {
    const characters = JSON.stringify(rows).length;
    if (characters > MAX_KEPT_CHARACTERS / 8) return;
    drop(key);
    kept.set(key, { rows, table, parts, characters });
    keptCharacters += characters;
    // The least recently used go first.
    for (const oldest of kept.keys()) {
      if (keptCharacters <= MAX_KEPT_CHARACTERS) break;
      drop(oldest);
    }
  }

  return async function <Row>(read: ClickHouseQuery, range: SettledRange): Promise<Row[]> {
    const parts = partsIn(await activeParts(range.table), range);
    const key = crypto
      .createHash('sha256')
      .update(JSON.stringify([read.name, read.sql, namedParams(read), parts]))
      .digest('base64');
    const hit = kept.get(key);
    if (hit) {
      kept.delete(key);
      kept.set(key, hit);
      return hit.rows as Row[];
    }
    const rows = await query<Row>(read);
    keep(key, rows, range.table, parts);
    return rows;
  };
}
