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
// a read at that moment does. The parts' time bounds come from the partition key's min-max index (seconds, so a part
// is taken as reaching up to a second past its last row).
//
// Only where one server's parts are the data read: on a replicated or cloud deployment a read and the look at the
// parts may reach two replicas at different points of their replication, so no read is kept there (topology.ts).
import crypto from 'node:crypto';
import type { ClickHouseQuery } from './clickhouse';
import { onceInRead } from './read-scope';

/** The rows of a table whose partition-key times (a run's start) lie in [from, to). */
export interface SettledRange {
  table: string;
  from: Date;
  to: Date;
}

interface Part {
  name: string;
  /** Seconds since the epoch: the earliest and latest partition-key time of the part's rows, rounded down. */
  min: number;
  max: number;
}

type Query = <Row>(query: ClickHouseQuery) => Promise<Row[]>;

// Kept results are bounded by their values (rows and array elements), about 16–32 bytes each.
const MAX_VALUES = 1_000_000;

// One thread: a few rows, ~1.5 ms more than a SELECT 1 (a read of every table's parts cost 11 ms of CPU).
const ACTIVE_PARTS = `
  SELECT name, toUnixTimestamp(min_time) AS min, toUnixTimestamp(max_time) AS max
  FROM system.parts
  WHERE database = currentDatabase() AND table = {table:String} AND active
  SETTINGS max_threads = 1`;

/** A result's weight: its rows and the elements of their arrays. */
const valuesOf = (rows: readonly unknown[]) =>
  rows.reduce<number>(
    (sum, row) =>
      sum + 1 + Object.values(row as object).reduce<number>((n, v) => n + (Array.isArray(v) ? v.length : 0), 0),
    0,
  );

export function settledReads(query: Query) {
  const kept = new Map<string, { rows: unknown[]; values: number }>();
  let keptValues = 0;
  const pending = new Map<string, Promise<Part[]>>();

  /**
   * A table's active parts, seen once per dashboard read (its statements come after its flush barrier), and outside
   * one read once for every asker of the same turn of the event loop (the sides of a statement ask together).
   */
  const activeParts = (table: string) => onceInRead(`settled-reads:${table}`, () => partsNow(table));

  function partsNow(table: string): Promise<Part[]> {
    let parts = pending.get(table);
    if (!parts) {
      parts = new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
        pending.delete(table);
        return query<Part>({ name: 'settled.parts', sql: ACTIVE_PARTS, params: { table } });
      });
      pending.set(table, parts);
    }
    return parts;
  }

  /** The names of the parts whose rows can lie in the range. */
  const partsOf = (parts: readonly Part[], { from, to }: SettledRange) =>
    parts
      .filter((part) => part.min * 1000 < to.getTime() && (part.max + 1) * 1000 > from.getTime())
      .map((part) => part.name)
      .sort()
      .join(',');

  function keep(key: string, rows: unknown[]) {
    const values = valuesOf(rows);
    if (values > MAX_VALUES / 4) return;
    kept.set(key, { rows, values });
    keptValues += values;
    for (const [oldest, entry] of kept) {
      if (keptValues <= MAX_VALUES) break;
      kept.delete(oldest);
      keptValues -= entry.values;
    }
  }

  return async function <Row>(read: ClickHouseQuery, range: SettledRange): Promise<Row[]> {
    const statement = crypto
      .createHash('sha256')
      .update(JSON.stringify([read.name, read.sql, read.params ?? {}]))
      .digest('base64');
    const key = `${statement} ${partsOf(await activeParts(range.table), range)}`;
    const hit = kept.get(key);
    if (hit) {
      // The most recently used last, so the oldest go first.
      kept.delete(key);
      kept.set(key, hit);
      return hit.rows as Row[];
    }
    const rows = await query<Row>(read);
    keep(key, rows);
    return rows;
  };
}
