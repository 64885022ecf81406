// The ingest log on real files: every append is acknowledged only after an fdatasync that followed its write,
// concurrent appends share a sync, and at start-up a torn or corrupt tail is cut, never replayed.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { IngestLog } from '../../src/ingest/log';

const quiet = pino({ level: 'silent' });
let directory: string;
beforeEach(() => { directory = fs.mkdtempSync(path.join(os.tmpdir(), 'runwatch-log-')); });
afterEach(() => {
  jest.restoreAllMocks();
  fs.rmSync(directory, { recursive: true, force: true });
});

const open = (maxBytes = 1024 ** 3) => IngestLog.open({ directory, maxBytes, log: quiet, rowsOf: () => 1 });
const record = (i: number) => Buffer.from(`record ${i} ${'x'.repeat(i % 7)}`);
const texts = (records: { payload: Buffer }[]) => records.map(({ payload }) => payload.toString());
const segmentFiles = () => fs.readdirSync(directory).filter((name) => name.endsWith('.log')).map((name) => path.join(directory, name));

describe('durability', () => {
  it('acknowledges each append only after an fdatasync of the file that holds it, issued after its write', async () => {
    // Node's own fs is observed, not replaced: the calls still reach the disk.
    const events: string[] = [];
    const { writev, fdatasync } = fs;
    jest.spyOn(fs, 'writev').mockImplementation(((fd: number, buffers: Buffer[], callback: (e: Error | null) => void) =>
      writev(fd, buffers, (error) => {
        events.push(...buffers.map((buffer) => `write:${buffer.subarray(8)}`));
        callback(error);
      })) as never);
    jest.spyOn(fs, 'fdatasync').mockImplementation(((fd: number, callback: (e: Error | null) => void) =>
      fdatasync(fd, (error) => {
        events.push('fdatasync');
        callback(error);
      })) as never);
    const { log } = open();
    const acks = Array.from({ length: 20 }, (_, i) => log.append(record(i), 1).then(() => events.push(`ack ${i}`)));
    await Promise.all(acks);
    await log.append(record(20), 1).then(() => events.push('ack 20'));

    for (let i = 0; i <= 20; i += 1) {
      const written = events.indexOf(`write:${record(i)}`);
      const synced = events.indexOf('fdatasync', written);
      const acked = events.indexOf(`ack ${i}`);
      expect({ i, written: written >= 0, syncedBeforeAck: synced > written && synced < acked }).toEqual({ i, written: true, syncedBeforeAck: true });
    }
    // Group commit: the 20 concurrent appends shared far fewer syncs than 20.
    expect(events.filter((event) => event === 'fdatasync').length).toBeLessThan(10);
  });

  it('refuses an append when the log is full, and acknowledges again once flushed segments are removed', async () => {
    const { log } = open(1024 * 1024);
    const big = Buffer.alloc(400 * 1024, 'a');
    await log.append(big, 1);
    await log.append(big, 1);
    await expect(log.append(big, 1)).rejects.toMatchObject({ status: 503, code: 'unavailable', headers: { 'Retry-After': '5' } });
    await log.seal();
    log.remove(log.sealedSegments()[0]);
    await expect(log.append(big, 1)).resolves.toBeGreaterThan(0);
  });
});

describe('start-up', () => {
  it('replays every record of every segment in order', async () => {
    const first = open();
    for (let i = 0; i < 5; i += 1) await first.log.append(record(i), 1);
    await first.log.seal();
    for (let i = 5; i < 8; i += 1) await first.log.append(record(i), 1);
    await first.log.close();
    const { records, log } = open();
    expect(texts(records)).toEqual(Array.from({ length: 8 }, (_, i) => record(i).toString()));
    expect(records.map(({ lsn }) => lsn)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(log.sealedSegments()).toHaveLength(2);
  });

  it('cuts a torn tail (the last record cut in half) and keeps everything before it; appends go on after', async () => {
    const first = open();
    for (let i = 0; i < 4; i += 1) await first.log.append(record(i), 1);
    await first.log.close();
    const [file] = segmentFiles();
    const size = fs.statSync(file).size;
    fs.truncateSync(file, size - Math.ceil(record(3).length / 2));

    const second = open();
    expect(texts(second.records)).toEqual([0, 1, 2].map((i) => record(i).toString()));
    expect(fs.statSync(file).size).toBe(size - record(3).length - 8);
    await second.log.append(record(9), 1);
    await second.log.close();
    expect(texts(open().records)).toEqual([0, 1, 2, 9].map((i) => record(i).toString()));
  });

  it('stops at a record whose checksum does not match: garbage is never replayed', async () => {
    const first = open();
    for (let i = 0; i < 3; i += 1) await first.log.append(record(i), 1);
    await first.log.close();
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
