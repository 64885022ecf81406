// The ingest log: every ingest write is a record appended to a segment file under DATA_DIR and fsynced before it
// is acknowledged. Concurrent appends share one write (group commit) to a segment opened with O_DSYNC: the write
// returns once its data is on disk, as a write and an fdatasync would, in one system call instead of two. A segment
// is sealed at a flush, and deleted once its records are in ClickHouse (flusher.ts). Records carry a CRC-32; at
// start-up a torn tail (a crash mid-write) is detected and cut, never replayed.
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';
import type { Logger } from 'pino';
import { StoreUnavailableError } from '../errors';
import { claimLogDirectory } from './log-owner';

/** length (4 bytes) and CRC-32 of the payload (4 bytes), then the payload. */
const FRAME_HEADER_BYTES = 8;
const SEGMENT_SUFFIX = '.log';

/** A segment no longer written to, waiting for the flusher. */
export interface SealedSegment {
  name: string;
  file: string;
  /** Bytes of whole records: a write that failed may have left more in the file, never acknowledged. */
  bytes: number;
  rows: number;
  lastLsn: number;
  /** When its first record was written, for the backlog's age. */
  firstAppendAt: number;
}

interface ActiveSegment extends SealedSegment {
  fd: number;
}

interface PendingAppend {
  /** The record's frame header (length, checksum), then its payload: written together, never copied into one. */
  header: Buffer;
  payload: Buffer;
  rows: number;
  lsn: number;
  resolve: () => void;
  reject: (error: unknown) => void;
}

export interface IngestLogOptions {
  directory: string;
  maxBytes: number;
  log: Logger;
  /** How many rows a record holds (the log itself does not read records). */
  rowsOf: (payload: Buffer) => number;
}

/** A replayed record: its payload and its log sequence number. */
export interface LoggedRecord {
  lsn: number;
  payload: Buffer;
}

/** Appends that return once the data is durable (O_DSYNC: every write is followed by the sync it needs). */
export const SEGMENT_OPEN_FLAGS =
  fs.constants.O_WRONLY | fs.constants.O_APPEND | fs.constants.O_CREAT | fs.constants.O_DSYNC;

// Node's callback API through the fs object at call time (one promise each, no FileHandle).
const files = {
  open: (file: string, flags: number) =>
    new Promise<number>((ok, fail) => fs.open(file, flags, (e, fd) => (e ? fail(e) : ok(fd)))),
  writev: (fd: number, buffers: Buffer[]) =>
    new Promise<number>((ok, fail) => fs.writev(fd, buffers, (e, written) => (e ? fail(e) : ok(written)))),
  fsync: (fd: number) => new Promise<void>((ok, fail) => fs.fsync(fd, (e) => (e ? fail(e) : ok()))),
  close: (fd: number) => new Promise<void>((ok) => fs.close(fd, () => ok())),
};

/** The frame header of a payload: its length and checksum. */
function frameHeader(payload: Buffer): Buffer {
  const header = Buffer.allocUnsafe(FRAME_HEADER_BYTES);
  header.writeUInt32LE(payload.length, 0);
  header.writeUInt32LE(crc32(payload), 4);
  return header;
}

const frameBytes = (append: PendingAppend) => FRAME_HEADER_BYTES + append.payload.length;

/** The whole records of a segment's bytes, and where they end: a torn or corrupt record ends the segment. */
export function readFrames(bytes: Buffer): { payloads: Buffer[]; validBytes: number } {
  const payloads: Buffer[] = [];
  let offset = 0;
  while (offset + FRAME_HEADER_BYTES <= bytes.length) {
    const length = bytes.readUInt32LE(offset);
    const end = offset + FRAME_HEADER_BYTES + length;
    if (end > bytes.length) break;
    const payload = bytes.subarray(offset + FRAME_HEADER_BYTES, end);
    if (crc32(payload) !== bytes.readUInt32LE(offset + 4)) break;
    payloads.push(payload);
    offset = end;
  }
  return { payloads, validBytes: offset };
}

/** Segment names sort in the order they were created; the random part keeps them unique across restarts. */
function newSegmentName(sequence: number): string {
  const [time, order] = [String(Date.now()).padStart(15, '0'), String(sequence).padStart(9, '0')];
  return `${time}-${order}-${randomBytes(4).toString('hex')}`;
}

export class IngestLog {
  private readonly sealed: SealedSegment[] = [];
  private active: ActiveSegment | undefined;
  private queue: PendingAppend[] = [];
  private writing: Promise<void> | undefined;
  private sealRequested = false;
  private nextLsn = 1;
  private segmentSequence = 0;
  private totalBytes = 0;

  private constructor(private readonly options: IngestLogOptions) {}

  /**
   * Opens the log in its directory and returns it with every record still in it, in order: what was acknowledged
   * and not yet flushed before the process stopped. Each segment's torn tail, if any, is cut off here.
   */
  static open(options: IngestLogOptions): { log: IngestLog; records: LoggedRecord[] } {
    fs.mkdirSync(options.directory, { recursive: true });
    claimLogDirectory(options.directory);
    const log = new IngestLog(options);
    const records: LoggedRecord[] = [];
    const names = fs
      .readdirSync(options.directory)
      .filter((name) => name.endsWith(SEGMENT_SUFFIX))
      .sort();
    for (const fileName of names) {
      const file = path.join(options.directory, fileName);
      const bytes = fs.readFileSync(file);
      const { payloads, validBytes } = readFrames(bytes);
      if (validBytes < bytes.length) {
        options.log.warn(
          { segment: fileName, keptBytes: validBytes },
          'ingest log: torn tail cut (a write the crash interrupted)',
        );
        fs.truncateSync(file, validBytes);
      }
      if (payloads.length === 0) {
        fs.rmSync(file);
        continue;
      }
      for (const payload of payloads) records.push({ lsn: log.nextLsn++, payload });
      const rows = payloads.reduce((sum, payload) => sum + options.rowsOf(payload), 0);
      const name = fileName.slice(0, -SEGMENT_SUFFIX.length);
      // The name starts with the segment's creation time: the backlog's age survives a restart.
      log.addSealed({
        name,
        file,
        bytes: validBytes,
        rows,
        lastLsn: log.nextLsn - 1,
        firstAppendAt: Number(name.split('-')[0]) || Date.now(),
      });
    }
    return { log, records };
  }

  /** Bytes held by the log: sealed segments and the one being written. */
  get bytes(): number {
    return this.totalBytes;
  }

  /**
   * Appends one record and resolves with its sequence number once it is on disk. Refused (503) when the log is full
   * or cannot be written: then nothing is acknowledged.
   */
  append(payload: Buffer): Promise<number> {
    const rows = this.options.rowsOf(payload);
    const bytes = FRAME_HEADER_BYTES + payload.length;
    if (this.totalBytes + bytes > this.options.maxBytes) {
      return Promise.reject(
        new StoreUnavailableError('ingest log', 'the log is full: ClickHouse is behind or unavailable'),
      );
    }
    this.totalBytes += bytes;
    const lsn = this.nextLsn++;
    return new Promise((resolve, reject) => {
      this.queue.push({ header: frameHeader(payload), payload, rows, lsn, resolve: () => resolve(lsn), reject });
      this.startWriting();
    });
  }

  /**
   * The first append of a quiet period starts a write on the next turn of the event loop, so that every request
   * parsed in this turn goes with it; appends that arrive while a write runs go together in the next one.
   */
  private startWriting(): Promise<void> {
    this.writing ??= new Promise<void>((done) => setImmediate(done)).then(() => this.writeQueued());
    return this.writing;
  }

  /** Rows in the segment being written: the flusher seals it once they reach a flush's size. */
  get activeRows(): number {
    return this.active?.rows ?? 0;
  }

  /** Seals the segment being written (once its write in progress ends), closing its file; resolves when done. */
  async seal(): Promise<void> {
    this.sealRequested = true;
    await this.startWriting();
  }

  /** Sealed segments, oldest first. */
  sealedSegments(): readonly SealedSegment[] {
    return this.sealed;
  }

  /** The records of a sealed segment, whole ones only. */
  async readSegment(segment: SealedSegment): Promise<Buffer[]> {
    const bytes = (await fs.promises.readFile(segment.file)).subarray(0, segment.bytes);
    const { payloads, validBytes } = readFrames(bytes);
    // Every byte counted was acknowledged: a segment that reads shorter is damaged, and is never flushed and deleted.
    if (validBytes !== segment.bytes)
      throw new Error(`segment ${segment.name} holds ${validBytes} whole bytes of ${segment.bytes}`);
    return payloads;
  }

  /** Deletes a sealed segment whose records are all in ClickHouse; it must be the oldest. */
  async remove(segment: SealedSegment): Promise<void> {
    if (this.sealed[0] !== segment) throw new Error('segments are removed oldest first');
    this.sealed.shift();
    this.totalBytes -= segment.bytes;
    // Off the event loop: unlinking a segment of tens of megabytes takes milliseconds.
    await fs.promises.rm(segment.file, { force: true });
  }

  /** The oldest record's age in milliseconds, 0 when the log is empty. */
  oldestAgeMs(now = Date.now()): number {
    const oldest = this.sealed[0] ?? this.active;
    return oldest && oldest.rows > 0 ? now - oldest.firstAppendAt : 0;
  }

  /** Rows not yet flushed: in sealed segments and the one being written. */
  get backlogRows(): number {
    return this.sealed.reduce((sum, segment) => sum + segment.rows, 0) + (this.active?.rows ?? 0);
  }

  private addSealed(segment: SealedSegment): void {
    this.sealed.push(segment);
    this.totalBytes += segment.bytes;
  }

  /** The group-commit loop: whatever queued while the last write ran goes out in one durable write. */
  private async writeQueued(): Promise<void> {
    try {
      while (this.queue.length > 0 || this.sealRequested) {
        if (this.sealRequested) await this.sealActive();
        if (this.queue.length > 0) await this.writeGroup(this.queue.splice(0));
      }
    } finally {
      this.writing = undefined;
    }
  }

  private async writeGroup(group: PendingAppend[]): Promise<void> {
    let segment: ActiveSegment;
    try {
      segment = this.active ?? (await this.openSegment());
      const expected = group.reduce((sum, append) => sum + frameBytes(append), 0);
      const written = await files.writev(
        segment.fd,
        group.flatMap((append) => [append.header, append.payload]),
      );
      // A short write (the disk filled up in the middle) is a failed one: none of the group is acknowledged.
      if (written !== expected) throw new Error(`short write: ${written} of ${expected} bytes`);
    } catch (error) {
      this.refuse(group, error);
      // What the failed write left in the file is past the segment's whole records: it is cut if it can be (a
      // refused write must not come back at a replay), and it ends the segment either way.
      if (this.active) {
        await new Promise<void>((ok) => fs.ftruncate(this.active!.fd, this.active!.bytes, () => ok()));
        await this.sealActive();
      }
      return;
    }
    if (segment.rows === 0) segment.firstAppendAt = Date.now();
    for (const append of group) {
      segment.bytes += frameBytes(append);
      segment.rows += append.rows;
      segment.lastLsn = append.lsn;
      append.resolve();
    }
  }

  private refuse(group: PendingAppend[], error: unknown): void {
    this.options.log.error(
      { err: error, records: group.length },
      'ingest log: write failed; the writes are refused (503)',
    );
    for (const append of group) this.totalBytes -= frameBytes(append);
    const unavailable = new StoreUnavailableError('ingest log', 'the ingest log cannot be written');
    unavailable.cause = error;
    for (const append of group) append.reject(unavailable);
  }

  /** A new segment file; its directory entry is made durable before any record in it is acknowledged. */
  private async openSegment(): Promise<ActiveSegment> {
    const name = newSegmentName((this.segmentSequence += 1));
    const file = path.join(this.options.directory, `${name}${SEGMENT_SUFFIX}`);
    const fd = await files.open(file, SEGMENT_OPEN_FLAGS);
    try {
      const directory = await files.open(this.options.directory, fs.constants.O_RDONLY);
      try {
        await files.fsync(directory);
      } finally {
        await files.close(directory);
      }
    } catch (error) {
      await files.close(fd);
      throw error;
    }
    this.active = { name, file, fd, bytes: 0, rows: 0, lastLsn: this.nextLsn - 1, firstAppendAt: Date.now() };
    return this.active;
  }

  private async sealActive(): Promise<void> {
    this.sealRequested = false;
    const active = this.active;
    if (!active) return;
    this.active = undefined;
    await files.close(active.fd);
    const { fd: _fd, ...sealed } = active;
    if (sealed.rows === 0) {
      fs.rmSync(sealed.file, { force: true });
      return;
    }
    // Its bytes were counted as they were appended.
    this.sealed.push(sealed);
  }
}
