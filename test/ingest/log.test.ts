// The ingest log on real files: every append is acknowledged only after a durable write that holds it (O_DSYNC),
// concurrent appends share a write, and at start-up a torn or corrupt tail is cut, never replayed.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { IngestLog, readFrames } from '../../src/ingest/log';

const quiet = pino({ level: 'silent' });
let directory: string;
beforeEach(() => {
  directory = fs.mkdtempSync(path.join(os.tmpdir(), 'runwatch-log-'));
});
afterEach(() => {
  jest.restoreAllMocks();
  fs.rmSync(directory, { recursive: true, force: true });
});

const open = (maxBytes = 1024 ** 3) => IngestLog.open({ directory, maxBytes, log: quiet, rowsOf: () => 1 });
const record = (i: number) => Buffer.from(`record ${i} ${'x'.repeat(i % 7)}`);
const texts = (records: { payload: Buffer }[]) => records.map(({ payload }) => payload.toString());
const segmentFiles = () =>
  fs
    .readdirSync(directory)
    .filter((name) => name.endsWith('.log'))
    .map((name) => path.join(directory, name));

describe('durability', () => {
  it('acknowledges each append only after the write holding it returned from a file opened with O_DSYNC', async () => {
    // Node's own fs is observed, not replaced: the calls still reach the disk.
    const events: string[] = [];
    const durableFds = new Set<number>();
    const { open: openFile, writev } = fs;
    jest.spyOn(fs, 'open').mockImplementation(((
      file: string,
      flags: number,
      callback: (e: Error | null, fd: number) => void,
    ) =>
      openFile(file, flags, (error, fd) => {
        // O_DSYNC: each write returns once its data (and the metadata needed to read it) is on disk.
        if (!error && (flags & fs.constants.O_DSYNC) === fs.constants.O_DSYNC) durableFds.add(fd);
        callback(error, fd);
      })) as never);
    jest.spyOn(fs, 'writev').mockImplementation(((
      fd: number,
      buffers: Buffer[],
      callback: (e: Error | null, bytes: number) => void,
    ) =>
      writev(fd, buffers, (error, bytes) => {
        const written = readFrames(Buffer.concat(buffers)).payloads;
        events.push(...written.map((payload) => `${durableFds.has(fd) ? 'durable' : 'plain'} write:${payload}`));
        callback(error, bytes);
      })) as never);
    const { log } = open();
    const acks = Array.from({ length: 20 }, (_, i) => log.append(record(i)).then(() => events.push(`ack ${i}`)));
    await Promise.all(acks);
    await log.append(record(20)).then(() => events.push('ack 20'));

    for (let i = 0; i <= 20; i += 1) {
      const written = events.indexOf(`durable write:${record(i)}`);
      const acked = events.indexOf(`ack ${i}`);
      expect({ i, durablyWrittenBeforeAck: written >= 0 && written < acked }).toEqual({
        i,
        durablyWrittenBeforeAck: true,
      });
    }
    // Group commit: the 20 concurrent appends shared far fewer writes than 20.
    const writeCalls = fs.writev as unknown as jest.Mock;
    expect(writeCalls.mock.calls.length).toBeLessThan(10);
  });

  it("makes a new segment's directory entry durable before acknowledging a record in it", async () => {
    const events: string[] = [];
    const { fsync, writev } = fs;
    jest.spyOn(fs, 'fsync').mockImplementation(((fd: number, callback: (e: Error | null) => void) =>
      fsync(fd, (error) => {
        events.push('fsync');
        callback(error);
      })) as never);
    jest.spyOn(fs, 'writev').mockImplementation(((
      fd: number,
      buffers: Buffer[],
      callback: (e: Error | null, bytes: number) => void,
    ) =>
      writev(fd, buffers, (error, bytes) => {
        events.push('write');
        callback(error, bytes);
      })) as never);
    const { log } = open();
    await log.append(record(1));
    await log.seal();
    await log.append(record(2));
    expect(events).toEqual(['fsync', 'write', 'fsync', 'write']);
  });

  it('refuses an append when the log is full, and acknowledges again once flushed segments are removed', async () => {
    const { log } = open(1024 * 1024);
    const big = Buffer.alloc(400 * 1024, 'a');
    await log.append(big);
    await log.append(big);
    await expect(log.append(big)).rejects.toMatchObject({
      status: 503,
      code: 'unavailable',
      headers: { 'Retry-After': '5' },
    });
    await log.seal();
    await log.remove(log.sealedSegments()[0]);
    await expect(log.append(big)).resolves.toBeGreaterThan(0);
  });

  it('refuses a group whose write came back short (a disk filling up), cuts it off, and never replays it', async () => {
    const first = open();
    await first.log.append(record(1));
    const { writev } = fs;
    // The write reaches the disk, but reports one byte less: as the system call does when space runs out mid-write.
    jest
      .spyOn(fs, 'writev')
      .mockImplementationOnce(((fd: number, buffers: Buffer[], callback: (e: Error | null, bytes: number) => void) =>
        writev(fd, buffers, (error, bytes) => callback(error, bytes - 1))) as never);
    await expect(first.log.append(record(2))).rejects.toMatchObject({ status: 503, code: 'unavailable' });
    await first.log.append(record(3));
    await first.log.seal();
    expect(texts(open().records)).toEqual([record(1).toString(), record(3).toString()]);
  });
});

describe('start-up', () => {
  it('replays every record of every segment in order', async () => {
    const first = open();
    for (let i = 0; i < 5; i += 1) await first.log.append(record(i));
    await first.log.seal();
    for (let i = 5; i < 8; i += 1) await first.log.append(record(i));
    await first.log.seal();
    const { records, log } = open();
    expect(texts(records)).toEqual(Array.from({ length: 8 }, (_, i) => record(i).toString()));
    expect(records.map(({ lsn }) => lsn)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(log.sealedSegments()).toHaveLength(2);
  });

  it('cuts a torn tail (the last record cut in half) and keeps everything before it; appends go on after', async () => {
    const first = open();
    for (let i = 0; i < 4; i += 1) await first.log.append(record(i));
    await first.log.seal();
    const [file] = segmentFiles();
    const size = fs.statSync(file).size;
    fs.truncateSync(file, size - Math.ceil(record(3).length / 2));

    const second = open();
    expect(texts(second.records)).toEqual([0, 1, 2].map((i) => record(i).toString()));
    expect(fs.statSync(file).size).toBe(size - record(3).length - 8);
    await second.log.append(record(9));
    await second.log.seal();
    expect(texts(open().records)).toEqual([0, 1, 2, 9].map((i) => record(i).toString()));
  });

  it('stops at a record whose checksum does not match: garbage is never replayed', async () => {
    const first = open();
    for (let i = 0; i < 3; i += 1) await first.log.append(record(i));
    await first.log.seal();
    const [file] = segmentFiles();
    const bytes = fs.readFileSync(file);
    // Flip a byte inside the second record's payload.
    bytes[8 + record(0).length + 8 + 2] ^= 0xff;
    fs.writeFileSync(file, bytes);
    expect(texts(open().records)).toEqual([record(0).toString()]);
  });

  it('drops a segment with no whole record at all', async () => {
    fs.writeFileSync(path.join(directory, '000000000000001-000000001-00000000.log'), Buffer.from([5, 0, 0]));
    const { records, log } = open();
    expect(records).toEqual([]);
    expect(log.sealedSegments()).toEqual([]);
    expect(segmentFiles()).toEqual([]);
  });
});
