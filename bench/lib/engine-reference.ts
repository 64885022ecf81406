// The engine's own bulk-insert rate, in the bench process: the batch scenario's rows straight into an embedded
// ClickHouse with the service's schema, in big inserts — what ingest could reach if HTTP, validation and its
// acknowledgements cost nothing.
import fs from 'node:fs';
import path from 'node:path';
import { openClickHouse, type ClickHouseStore } from '../../src/db/clickhouse';
import type { LoopThresholds } from '../../src/ingest/loops';
import { startProbe, type Usage } from './probe';
import { cpuSecondsOf } from './service-process';
import { renewIds, storedRows, type StoredRows, type WholeRunItem } from './whole-runs';

const SCHEMA_DIR = path.resolve(__dirname, '..', '..', 'schema', 'clickhouse');

/**
 * The ClickHouse statements of schema/clickhouse/*.sql, split as src/db/migrate.ts splits them (on the `;` ending
 * a line). Run directly rather than through `migrate`, which needs a Postgres too.
 */
function schemaStatements(): string[] {
  return fs
    .readdirSync(SCHEMA_DIR)
    .filter((file) => /^\d+_.+\.sql$/.test(file))
    .sort()
    .flatMap((file) => fs.readFileSync(path.join(SCHEMA_DIR, file), 'utf8').split(/;\s*$/m))
    .map((statement) => statement.replace(/^\s*--.*$/gm, '').trim())
    .filter(Boolean);
}

/** Runs first, then their steps, each table in an insert of its own, one insert at a time. */
async function insertChunk(ch: ClickHouseStore, rows: StoredRows): Promise<void> {
  await ch.insert('runs', rows.runs);
  await ch.insert('run_steps', rows.steps);
}

export interface BulkInsertFigure {
  runs: number;
  runsPerSecond: number;
  usage: Usage;
  rssMiB: number;
}

export interface BulkInsertOptions {
  /** The engine's data directory; chdb binds one per process, so the bench process opens only this one. */
  dataDir: string;
  /** One batch's items, repeated to fill a chunk. */
  items: readonly WholeRunItem[];
  chunkRuns: number;
  seconds: number;
  thresholds: LoopThresholds;
}

/** Renews the ids of `rows` while the engine works on another chunk: the JavaScript thread is idle then. */
const renewWhileInserting = (rows: StoredRows) =>
  new Promise<void>((resolve) => setTimeout(() => resolve(renewIds(rows)), 50));

/**
 * Inserts chunks of `chunkRuns` runs (after one untimed chunk) until `seconds` have passed; runs/s over them all.
 * Two chunks take turns, so that giving one new ids overlaps the other's insert rather than adding to the time.
 */
export async function measureBulkInsert({
  dataDir,
  items,
  chunkRuns,
  seconds,
  thresholds,
}: BulkInsertOptions): Promise<BulkInsertFigure> {
  const ch = await openClickHouse({ dataDir });
  try {
    for (const statement of schemaStatements()) await ch.command(statement);
    const chunkItems = Array.from({ length: chunkRuns }, (_, i) => items[i % items.length]);
    const chunks = [0, 1].map(() => storedRows('00000000-0000-4000-8000-00000000be4c', chunkItems, thresholds));
    // The untimed chunk creates the tables' first parts and warms the JIT, as the scenarios' warm-up does.
    await insertChunk(ch, chunks[0]);
    const probe = startProbe(() => cpuSecondsOf(process.pid), path.join(dataDir, 'clickhouse'));
    let runs = 0;
    for (let turn = 1; runs === 0 || probe.elapsedSeconds() < seconds; turn += 1) {
      await Promise.all([insertChunk(ch, chunks[turn % 2]), renewWhileInserting(chunks[(turn + 1) % 2])]);
      runs += chunkRuns;
    }
    const usage = probe.stop();
    return { runs, runsPerSecond: runs / usage.seconds, usage, rssMiB: process.memoryUsage().rss / 1024 ** 2 };
  } finally {
    await ch.close();
  }
}
