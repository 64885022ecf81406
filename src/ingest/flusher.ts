// The flusher: moves the log's sealed segments into ClickHouse in big inserts, oldest first, one insert per table
// at a time (in the order of STORE_ORDER), and deletes each segment once all its rows are stored. Each insert
// carries a deterministic deduplication token (segment, table, chunk), so a segment inserted again after a crash is
// not stored twice.
import fs from 'node:fs';
import type { Logger } from 'pino';
import { inChunks } from '../chunks';
import { isInputError, type ClickHouseStore } from '../db/clickhouse';
import { outsideRead } from '../db/read-scope';
import type { IngestLog, SealedSegment } from './log';
import type { RunTable } from './records';
import type { SessionNumbers } from '../sessions/numbers';
import { deleteReplaced, insertLines, linesToStore, STORE_ORDER } from './store-lines';

// ClickHouse refuses an insert spanning more partitions than max_partitions_per_insert_block (100 by default):
// a segment's rows are inserted in chunks of at most this many partitions, so that any mix of dates lands.
const MAX_PARTITIONS_PER_INSERT = 100;
/**
 * The rows' text an insert carries at most (a row bigger than this is an insert alone). While it inserts, the engine
 * holds about ten times an insert's text (parsed columns, the projections' and views' blocks), and the three tables'
 * inserts run at once: a segment of 150,000 rows inserted whole took ~400 MiB at the peak of a big OTLP export
 * (BENCHMARKS.md). At 4 MiB an insert still holds thousands of rows, and the flush's rate is unchanged.
 */
export const MAX_INSERT_BYTES = 4 * 1024 * 1024;
/** When a pass starts: at once, or after a rest as long as the last pass took (reads waiting side by side). */
export type PassStart = 'at once' | 'after a rest';

export interface FlusherOptions {
  log: IngestLog;
  ch: ClickHouseStore;
  /** The numbers of the sessions of the rows it inserts (Postgres). */
  sessionNumbers: SessionNumbers;
  logger: Logger;
  /** Where rows the engine refuses as data are kept, one JSON line each, with the reason. */
  deadLetterFile: string;
  /** Called with the sequence number up to which every record is in ClickHouse. */
  onFlushed: (flushedLsn: number) => void;
  /** The sequence number of the last record acknowledged (on disk): a pass starting now flushes it. */
  acknowledgedLsn: () => number;
  /**
   * The longest a pass rests after the last one when reads wait side by side (`Flusher.flush`;
   * INGEST_FLUSH_MAX_REST_MS, 250 ms by default). Under steady ingest every read asks for a pass, and many reads at
   * once kept passes back to back: many small inserts, whose merges took ~30% of the CPU ingest had alone
   * (bench:overload, BENCHMARKS.md). A rest as long as the last pass took halves them at most, and adds at most this
   * to a read's wait.
   */
  maxRestMs: number;
}

/**
 * A table's lines in chunks of at most MAX_PARTITIONS_PER_INSERT partitions and MAX_INSERT_BYTES, in a fixed order:
 * the chunks of a segment are the same whenever it is flushed (tokens depend on it).
 */
function chunksOf(partitions: Map<string, string[]>): string[][] {
  const keys = [...partitions.keys()].sort();
  const chunks: string[][] = [];
  for (let i = 0; i < keys.length; i += MAX_PARTITIONS_PER_INSERT) {
    const lines = keys.slice(i, i + MAX_PARTITIONS_PER_INSERT).flatMap((key) => partitions.get(key)!);
    // A line and its newline, in characters: close enough to bytes for a bound (the rows' text is mostly ASCII).
    chunks.push(...inChunks(lines, (line) => line.length + 1, MAX_INSERT_BYTES));
  }
  return chunks;
}

export class Flusher {
  private pass: Promise<void> | undefined;
  private nextPass: Promise<void> | undefined;
  /** The last record acknowledged when the running pass started: its seal puts every record up to it in the pass. */
  private passCovers = 0;
  private nextStart: PassStart = 'at once';
  /** The last pass's start and end, on the monotonic clock (performance.now). */
  private lastPass = { startedAt: 0, endedAt: 0 };
  /** Set while a pass rests: starts it at once. */
  private endRest: (() => void) | undefined;

  constructor(private readonly options: FlusherOptions) {}

  /**
   * Seals the segment being written and flushes every sealed segment. A call while a pass runs gets the next pass,
   * which starts after it: so the pass a caller waits for always covers what was acknowledged before the call.
   * A pass asked for 'after a rest' first rests as long as the last pass took, counted from its end (at most
   * maxRestMs), so that reads asking side by side keep the flusher busy half the time at most (when only they ask);
   * what is acknowledged while it rests goes into it. A call 'at once' ends a rest under way, and the next pass rests
   * only if every call waiting for it asked for a rest. Rejects when ClickHouse cannot store a segment (it stays in the
   * log, and the next pass tries again).
   */
  flush(start: PassStart = 'at once'): Promise<void> {
    if (this.endRest) {
      if (start === 'at once') this.endRest();
      return this.pass!;
    }
    if (!this.pass) {
      const restMs = start === 'after a rest' ? this.restMs() : 0;
      this.passCovers = restMs > 0 ? Infinity : this.options.acknowledgedLsn();
      const pass = restMs > 0 ? this.rest(restMs).then(() => this.startPass()) : this.startPass();
      this.pass = pass.finally(() => {
        this.lastPass.endedAt = performance.now();
        this.pass = undefined;
      });
      return this.pass;
    }
    // The next pass rests only if everyone waiting for it asked for a rest.
    this.nextStart = this.nextPass && this.nextStart === 'at once' ? 'at once' : start;
    this.nextPass ??= this.pass
      .catch(() => undefined)
      .then(() => {
        this.nextPass = undefined;
        return this.flush(this.nextStart);
      });
    return this.nextPass;
  }

  /**
   * Resolves once every record up to `lsn` is in ClickHouse: with the running pass when that pass holds the record,
   * else with the next. A read waits for the writes acknowledged before it began, not for an insert of later ones.
   */
  flushThrough(lsn: number, start: PassStart = 'at once'): Promise<void> {
    return this.pass && this.passCovers >= lsn && !this.endRest ? this.pass : this.flush(start);
  }

  /** Resolves after `ms`, or once `endRest` is called. */
  private rest(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.endRest?.(), ms);
      this.endRest = () => {
        clearTimeout(timer);
        this.endRest = undefined;
        resolve();
      };
    });
  }

  private restMs(): number {
    const { startedAt, endedAt } = this.lastPass;
    return Math.min(endedAt - startedAt - (performance.now() - endedAt), this.options.maxRestMs);
  }

  private startPass(): Promise<void> {
    this.passCovers = this.options.acknowledgedLsn();
    this.lastPass.startedAt = performance.now();
    // A pass is everyone's: the read that asks for it waits for it, but its statements are ingest's (read-scope.ts).
    return outsideRead(() => this.flushSealed());
  }

  private async flushSealed(): Promise<void> {
    const { log, onFlushed } = this.options;
    await log.seal();
    for (const segment of [...log.sealedSegments()]) {
      await this.flushSegment(segment);
      await log.remove(segment);
      onFlushed(segment.lastLsn);
    }
  }

  private async flushSegment(segment: SealedSegment): Promise<void> {
    const startedAt = Date.now();
    const tables = await linesToStore(await this.options.log.readSegment(segment), this.options.sessionNumbers);
    // Within a group the tables are independent: each gets its inserts one at a time, all at once.
    for (const group of STORE_ORDER) {
      await Promise.all(
        group.map(async (table) => {
          const chunks = chunksOf(tables.get(table) ?? new Map());
          for (const [i, lines] of chunks.entries()) {
            const setAside = new Set(await this.insertIsolating(table, lines, `${segment.name}/${table}/${i}`));
            // Outside the isolating inserts: a failed deletion is retried with the segment, never split into new
            // inserts.
            // A replacing row set aside replaces nothing: the run keeps its older row.
            if (table === 'replaced')
              await deleteReplaced(
                this.options.ch,
                lines.filter((line) => !setAside.has(line)),
              );
          }
        }),
      );
    }
    this.options.logger.info(
      { segment: segment.name, rows: segment.rows, ms: Date.now() - startedAt },
      'ingest log: segment flushed',
    );
  }

  /**
   * Inserts lines; when the engine refuses their data, halves them until the refused rows are alone, keeps those
   * in the dead-letter file and lands the rest. Halving is deterministic, so the halves' tokens are too. Returns the
   * lines set aside.
   */
  private async insertIsolating(table: RunTable, lines: string[], token: string): Promise<string[]> {
    try {
      await insertLines(this.options.ch, table, lines, { deduplicationToken: token });
      return [];
    } catch (error) {
      if (!isInputError(error)) throw error;
      if (lines.length === 1) {
        this.deadLetter(table, lines[0], error, token);
        return lines;
      }
      const half = Math.ceil(lines.length / 2);
      const setAside = await this.insertIsolating(table, lines.slice(0, half), `${token}.0`);
      return [...setAside, ...(await this.insertIsolating(table, lines.slice(half), `${token}.1`))];
    }
  }

  private deadLetter(table: RunTable, line: string, error: unknown, token: string): void {
    const reason = String((error as { cause?: { message?: unknown } }).cause?.message ?? error).split('\n')[0];
    fs.appendFileSync(
      this.options.deadLetterFile,
      `${JSON.stringify({ at: new Date().toISOString(), table, token, reason, row: line })}\n`,
    );
    this.options.logger.error(
      { table, token, reason, deadLetterFile: this.options.deadLetterFile },
      'ingest log: a row ClickHouse refuses was set aside',
    );
  }
}
