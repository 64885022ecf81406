// Streamed results of the embedded engine (chdb), for ClickHouseStore.stream: its client connection reads a whole
// result into memory, so a stream takes a session of its own (chdb lets several share one data directory, each with
// its own settings).
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import type { Session } from 'chdb';
import type { Streamer } from './clickhouse';

// Formats a chunk at a time can be written in: a row a line, so that the chunks' texts, one after the other, are the
// result's. chdb writes each chunk with a format of its own, so a format with a header repeats it in every chunk.
const LINE_FORMATS = /^(JSONEachRow|JSONLines|NDJSON|JSONCompactEachRow|CSV|TSV|TabSeparated)(WithNames)?$/i;

async function applySettings(session: Session, settings: Record<string, unknown>) {
  for (const [name, value] of Object.entries(settings)) {
    if (value === undefined) continue;
    const literal = typeof value === 'number' ? value : `'${String(value).replaceAll("'", "''")}'`;
    await session.queryAsync(`SET ${name} = ${literal}`);
  }
}

/**
 * A line format's result, chunk by chunk as the engine fetches the next one when the last is read. A header (the
 * `WithNames` line) is kept from the first chunk only. The first chunk is awaited, so that a refused query rejects.
 */
async function streamLines(session: Session, sql: string, params: Record<string, unknown>, format: string) {
  const chunks = session.queryStreamBind(sql, params, { format })[Symbol.asyncIterator]();
  const first = await chunks.next();
  const headed = /WithNames$/i.test(format);
  async function* bytes() {
    for (let chunk = first; !chunk.done; chunk = await chunks.next()) {
      const raw = Buffer.from(chunk.value.raw());
      yield headed && chunk !== first ? raw.subarray(raw.indexOf(10) + 1) : raw;
    }
  }
  // Ended, failed or dropped by its reader: the engine's stream is cancelled and the session closed either way.
  return Readable.from(bytes(), { objectMode: false }).once('close', () => {
    void chunks.return?.();
    session.close();
  });
}

/**
 * A file format's result (Parquet: one footer for the whole file): the engine writes the file to disk as it reads
 * the rows, then the file is streamed and deleted. Memory stays the engine's row groups; the first byte waits for
 * the last row.
 */
async function streamFile(
  session: Session,
  directory: string,
  sql: string,
  params: Record<string, unknown>,
  format: string,
) {
  fs.mkdirSync(directory, { recursive: true });
  const file = path.join(directory, `${randomUUID()}.${format.toLowerCase()}`);
  try {
    await session.queryBindAsync(`INSERT INTO FUNCTION file({export_file:String}, '${format}') ${sql}`, {
      ...params,
      export_file: file,
    });
  } catch (error) {
    fs.rmSync(file, { force: true });
    throw error;
  } finally {
    session.close();
  }
  return fs.createReadStream(file).once('close', () => fs.rmSync(file, { force: true }));
}

/** Streams of the engine whose data directory is `directory`; files of file formats are written beside it. */
export function streamOverSession(directory: string): Streamer {
  const exports = path.join(path.dirname(directory), 'exports');
  return async ({ sql, params = {}, format }, settings) => {
    if (!/^\w+$/.test(format)) throw new Error(`not an output format: ${format}`);
    // Loaded only in embedded mode, as the store's connection is (clickhouse.ts).
    const { Session: EmbeddedSession } = await import('chdb');
    const session = new EmbeddedSession(directory);
    try {
      await applySettings(session, settings);
      if (LINE_FORMATS.test(format)) return await streamLines(session, sql, params, format);
      return await streamFile(session, exports, sql, params, format);
    } catch (error) {
      session.close();
      throw error;
    }
  };
}
