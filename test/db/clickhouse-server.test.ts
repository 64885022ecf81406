// The suite's ClickHouse server (test/support/clickhouse-server.ts) answers @clickhouse/client as a ClickHouse server
// does: inserts, selects with parameters, commands, exec, settings, compression, and errors.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  ClickHouseError,
  ClickHouseLogLevel,
  createClient,
  type ClickHouseClient,
  type ClickHouseSettings,
} from '@clickhouse/client';
import { startClickHouseServerProcess, type ClickHouseServerProcess } from '../support/clickhouse-server';

let server: ClickHouseServerProcess;
let client: ClickHouseClient;
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'runwatch-clickhouse-server-'));

beforeAll(async () => {
  server = await startClickHouseServerProcess(dataDir, 'server_test');
  client = createClient({
    url: server.url,
    database: 'server_test',
    username: 'anyone',
    password: 'anything',
    // The errors below are expected: the client need not log them.
    log: { level: ClickHouseLogLevel.OFF },
  });
  await client.command({
    query: `CREATE TABLE events (id UInt32, name String, at DateTime64(3, 'UTC'), tags Array(String))
              ENGINE = MergeTree ORDER BY id`,
  });
}, 90_000);

afterAll(async () => {
  await client?.close();
  await server?.stop();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

const errorOf = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: unknown) => error,
  );

test('ping: the client and GET /ping', async () => {
  expect((await client.ping()).success).toBe(true);
  const res = await fetch(`${server.url}/ping`);
  expect({ status: res.status, body: await res.text() }).toEqual({ status: 200, body: 'Ok.\n' });
});

test('insert rows as JSONEachRow, then select them with parameters of several types', async () => {
  await client.insert({
    table: 'events',
    format: 'JSONEachRow',
    values: [
      { id: 1, name: "it's a \\ test", at: '2026-01-02 03:04:05.678', tags: ['a', "b'c"] },
      { id: 2, name: 'second', at: '2026-01-03 00:00:00.000', tags: [] },
    ],
  });
  const result = await client.query({
    query: `SELECT id, name, toString(at) AS at_text, tags FROM events
             WHERE name = {name:String} AND at >= {from:DateTime64(3)} AND has({tags:Array(String)}, 'b''c')`,
    query_params: { name: "it's a \\ test", from: new Date('2026-01-01T00:00:00Z'), tags: ['x', "b'c"] },
    format: 'JSONEachRow',
  });
  expect(await result.json()).toEqual([
    { id: 1, name: "it's a \\ test", at_text: '2026-01-02 03:04:05.678', tags: ['a', "b'c"] },
  ]);
});

test('the formats: JSON with its meta, TabSeparated by default for exec', async () => {
  const json = await client.query({
    query: 'SELECT 1 AS one, {s:String} AS s',
    query_params: { s: 'x' },
    format: 'JSON',
  });
  const body = await json.json<{ meta: unknown[]; data: unknown[]; rows: number }>();
  expect(body).toMatchObject({
    meta: [
      { name: 'one', type: 'UInt8' },
      { name: 's', type: 'String' },
    ],
    rows: 1,
  });
  expect(body.data).toEqual([{ one: 1, s: 'x' }]);

  const exec = await client.exec({ query: 'SELECT number, toString(number) FROM system.numbers LIMIT 2' });
  expect(exec.query_id).toBeTruthy();
  let text = '';
  for await (const chunk of exec.stream) text += String(chunk);
  expect(text).toBe('0\t0\n1\t1\n');
});

test('command with parameters; the summary and the query id come back', async () => {
  const queryId = 'a-query-id-of-ours';
  const result = await client.command({
    query: 'INSERT INTO events (id, name, at) VALUES ({id:UInt32}, {name:String}, now64(3))',
    query_params: { id: 3, name: 'third' },
    query_id: queryId,
  });
  expect(result.query_id).toBe(queryId);
  expect(result.response_headers['x-clickhouse-query-id']).toBe(queryId);
  expect(result.summary).toMatchObject({ written_rows: expect.any(String) });
  const rows = await client.query({ query: 'SELECT name FROM events WHERE id = 3', format: 'JSONEachRow' });
  expect(await rows.json()).toEqual([{ name: 'third' }]);
});

test('settings hold for their statement alone; the client-only ones are not passed to the engine', async () => {
  const setting = async (settings: ClickHouseSettings) => {
    const result = await client.query({
      query: "SELECT getSetting('max_execution_time') AS seconds",
      format: 'JSONEachRow',
      clickhouse_settings: settings,
    });
    return ((await result.json()) as { seconds: number }[])[0].seconds;
  };
  expect(await setting({ max_execution_time: 7, wait_end_of_query: 1, send_progress_in_http_headers: 0 })).toBe(7);
  expect(await setting({})).toBe(0);
});

test('compressed requests and responses', async () => {
  const compressed = createClient({
    url: server.url,
    database: 'server_test',
    compression: { request: true, response: true },
  });
  try {
    await compressed.insert({
      table: 'events',
      format: 'JSONEachRow',
      values: [{ id: 4, name: 'gzipped', at: '2026-01-04 00:00:00.000', tags: [] }],
    });
    const result = await compressed.query({ query: 'SELECT name FROM events WHERE id = 4', format: 'JSONEachRow' });
    expect(result.response_headers['content-encoding']).toBe('gzip');
    expect(await result.json()).toEqual([{ name: 'gzipped' }]);
  } finally {
    await compressed.close();
  }
});

test('errors as ClickHouse sends them: status, X-ClickHouse-Exception-Code, Code: N. DB::Exception body', async () => {
  const unknownTable = await errorOf(client.query({ query: 'SELECT * FROM nowhere', format: 'JSONEachRow' }));
  expect(unknownTable).toBeInstanceOf(ClickHouseError);
  expect(unknownTable).toMatchObject({ code: '60', type: 'UNKNOWN_TABLE' });

  const refused = await errorOf(
    client.insert({ table: 'events', format: 'JSONEachRow', values: [{ id: 'not a number', name: 'x' }] }),
  );
  expect(refused).toBeInstanceOf(ClickHouseError);
  expect(['6', '27', '72']).toContain((refused as ClickHouseError).code);

  const res = await fetch(`${server.url}/?database=server_test`, { method: 'POST', body: 'SELEC 1' });
  expect(res.status).toBe(400);
  expect(res.headers.get('x-clickhouse-exception-code')).toBe('62');
  expect(await res.text()).toMatch(/^Code: 62\. DB::Exception: Syntax error.*\(SYNTAX_ERROR\) \(version [\d.]+\)\n$/s);

  const unknownDatabase = await fetch(`${server.url}/?database=nowhere`, { method: 'POST', body: 'SELECT 1' });
  expect(unknownDatabase.status).toBe(404);
  expect(unknownDatabase.headers.get('x-clickhouse-exception-code')).toBe('81');

  // A failed statement leaves nothing behind: the next one runs with its own settings and database.
  const after = await client.query({
    query: "SELECT currentDatabase() AS db, getSetting('max_execution_time') AS seconds",
    format: 'JSONEachRow',
  });
  expect(await after.json()).toEqual([{ db: 'server_test', seconds: 0 }]);
});

test('the statement in the URL and the body together, as ClickHouse reads them', async () => {
  const query = encodeURIComponent('INSERT INTO events (id, name, at) FORMAT JSONEachRow');
  const res = await fetch(`${server.url}/?database=server_test&query=${query}`, {
    method: 'POST',
    body: '{"id":5,"name":"url and body","at":"2026-01-05 00:00:00.000"}\n',
  });
  expect(res.status).toBe(200);
  expect(JSON.parse(res.headers.get('x-clickhouse-summary')!)).toMatchObject({ written_rows: expect.any(String) });
  const rows = await client.query({ query: 'SELECT name FROM events WHERE id = 5', format: 'JSONEachRow' });
  expect(await rows.json()).toEqual([{ name: 'url and body' }]);
});

test('statements run side by side, each with its own settings', async () => {
  const finished: string[] = [];
  const slow = client
    .query({ query: 'SELECT sleep(2)', format: 'JSONEachRow' })
    .then((result) => result.json())
    .then(() => finished.push('slow'));
  const seconds = await Promise.all(
    [1, 2, 3, 4, 5, 6].map(async (limit) => {
      const result = await client.query({
        query: "SELECT getSetting('max_execution_time') AS seconds",
        format: 'JSONEachRow',
        clickhouse_settings: { max_execution_time: limit },
      });
      return ((await result.json()) as { seconds: number }[])[0].seconds;
    }),
  );
  finished.push('quick');
  await slow;
  expect(seconds).toEqual([1, 2, 3, 4, 5, 6]);
  expect(finished).toEqual(['quick', 'slow']);
});
