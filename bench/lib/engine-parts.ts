// Counts the parts an embedded ClickHouse has inserted into its tables, from the directories it keeps on disk.
//
// A MergeTree table numbers its blocks table-wide: every part an insert creates takes a new block number
// (one per partition the insert touches), and every mutation takes one too; merges reuse their sources' numbers.
// So the rise of a table's highest block number between two moments is the number of parts inserted meanwhile,
// however many merged since, and it can be read while another process holds the engine (chdb binds one
// data directory per process, so the bench cannot ask the server's engine through SQL).
import fs from 'node:fs';
import path from 'node:path';

// `<partition>_<minBlock>_<maxBlock>_<level>[_<mutation>]`. Partition ids are digits, hex or dashes, never an
// underscore, so temporary directories (tmp_insert_…, tmp_merge_…, delete_tmp_…) do not match.
const PART = /^[0-9A-Za-z-]+_\d+_(\d+)_\d+(?:_\d+)?$/;
// A mutation's file carries the block number it took.
const MUTATION = /^mutation_(\d+)\.txt$/;
// The first line of a table's metadata in an Atomic database: `ATTACH TABLE _ UUID '<uuid>'`.
const TABLE_UUID = /^ATTACH TABLE _ UUID '([0-9a-f-]{36})'/;

/** The data directories of a database's tables: `store/<first 3 characters of the uuid>/<uuid>/`. */
function tableDirectories(engineDir: string, database: string): string[] {
  const metadata = path.join(engineDir, 'metadata', database);
  if (!fs.existsSync(metadata)) return [];
  return fs
    .readdirSync(metadata)
    .filter((file) => file.endsWith('.sql'))
    .flatMap((file) => {
      const uuid = TABLE_UUID.exec(fs.readFileSync(path.join(metadata, file), 'utf8'))?.[1];
      return uuid ? [path.join(engineDir, 'store', uuid.slice(0, 3), uuid)] : [];
    });
}

function highestBlock(tableDir: string): number {
  let highest = 0;
  // A table dropped meanwhile has no directory: it counts nothing.
  const entries = fs.existsSync(tableDir) ? fs.readdirSync(tableDir) : [];
  for (const entry of entries) {
    const block = PART.exec(entry)?.[1] ?? MUTATION.exec(entry)?.[1];
    if (block !== undefined) highest = Math.max(highest, Number(block));
  }
  return highest;
}

/** Blocks numbered so far over all tables of the database; the difference of two readings is the parts inserted. */
export function blocksNumbered(engineDir: string, database = 'default'): number {
  return tableDirectories(engineDir, database).reduce((sum, tableDir) => sum + highestBlock(tableDir), 0);
}
