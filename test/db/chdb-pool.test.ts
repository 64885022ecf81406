// The embedded engine's parameters bound as literals (src/db/chdb-pool.ts), through the real engine: every value comes
// back as it was sent, whatever its characters, and none can change the statement it is bound into.
import { TupleParam } from '@clickhouse/client';
import fc from 'fast-check';
import { bindLiterals, toLiteral } from '../../src/db/chdb-pool';
import { asRead } from '../../src/db/read-scope';
import { startTestApp, type TestApp } from '../support/app';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.close());

const select = <Row>(sql: string, params: Record<string, unknown>) =>
  app.stores.ch.query<Row>({ name: 'test.bind', sql, params });

const HOSTILE = [
  '',
  "'",
  "\\'",
  '\\',
  "a' OR 1 = 1 --",
  "x'); DROP TABLE runs; --",
  "\\'; SELECT 1; --",
  'tab\there',
  'line\nbreak\r\n',
  'nul\u0000byte',
  '{other:String}',
  'ünïcödé ✓ 𝄞',
  '\u007f\u001b[31m',
  'c1 \u0085 \u009f',
];

it.each(HOSTILE)('binds the string %j as itself', async (text) => {
  const [row] = await select<{ value: string; length: number }>(
    'SELECT {value:String} AS value, length({value:String}) AS length',
    { value: text },
  );
  expect(row.value).toBe(text);
  expect(row.length).toBe(Buffer.byteLength(text));
});

it('binds any string as itself (property)', async () => {
  await fc.assert(
    fc.asyncProperty(fc.string({ unit: 'binary', maxLength: 40 }), async (text) => {
      const [row] = await select<{ value: string }>('SELECT {value:String} AS value', { value: text });
      // Lone surrogates have no UTF-8: they travel as U+FFFD, as with the engine's own binding.
      expect(row.value).toBe(Buffer.from(text).toString());
    }),
    { numRuns: 50 },
  );
});

it('binds the values the statements take, to their types', async () => {
  const [row] = await select<Record<string, unknown>>(
    `SELECT {id:UUID} AS id, {at:DateTime64(3, 'UTC')} AS at, {count:UInt64} AS count, {level:Float64} AS level,
       {flag:Bool} AS flag, {names:Array(String)} AS names, {cells:Array(Tuple(UInt8, Int64))} AS cells,
       {nested:Array(Array(UInt64))} AS nested, toString({big:Int64}) AS big, {single:Tuple(UInt8)} AS single,
       {maybe:Nullable(String)} AS maybe`,
    {
      id: '01a21f7f-6f3b-7350-a2e2-1e3c4717f7af',
      at: '2026-11-28 00:12:54.321',
      count: 25,
      level: 0.95,
      flag: true,
      names: ["it's", 'b\\'],
      cells: [new TupleParam([1, -64]), new TupleParam([0, 7])],
      nested: [[1, 2], []],
      big: -9_007_199_254_740_993n,
      maybe: null,
      single: new TupleParam([5]),
    },
  );
  expect(row).toEqual({
    id: '01a21f7f-6f3b-7350-a2e2-1e3c4717f7af',
    at: '2026-11-28 00:12:54.321',
    count: 25,
    level: 0.95,
    flag: true,
    names: ["it's", 'b\\'],
    cells: [
      [1, -64],
      [0, 7],
    ],
    nested: [[1, 2], []],
    big: '-9007199254740993',
    maybe: null,
    single: [5],
  });
});

it('casts each value to its placeholder type, as the engine binds it', () => {
  expect(bindLiterals("WHERE at >= {at:DateTime64(3, 'UTC')} AND n IN {n:Array(UInt8)}", { at: 'x', n: [1] })).toBe(
    "WHERE at >= _CAST('x', 'DateTime64(3, \\'UTC\\')') AND n IN _CAST([1], 'Array(UInt8)')",
  );
});

it('leaves a statement without parameters as it is: an insert carries its rows after its text', () => {
  const insert = 'INSERT INTO t FORMAT JSONCompactEachRow\n["{a:String}"]';
  expect(bindLiterals(insert, {})).toBe(insert);
});

it('refuses a placeholder without a value, and values it cannot bind', () => {
  expect(() => bindLiterals('SELECT {a:String}, {b:String}', { a: 'x' })).toThrow('no value for the parameter b');
  for (const value of [Number.NaN, Infinity, new Date(), { a: 1 }, () => 1])
    expect(() => toLiteral(value)).toThrow(TypeError);
});

it('binds a String as a plain literal, which goes where the grammar takes nothing else', () => {
  expect(bindLiterals('ALTER TABLE runs DROP PART {part:String}', { part: "all_1_1_0'" })).toBe(
    "ALTER TABLE runs DROP PART 'all_1_1_0\\''",
  );
});

it('runs a statement outside a read while reads hold every connection they may take', async () => {
  const long = () =>
    app.stores.ch.query({
      name: 'long',
      sql: 'SELECT sum(cityHash64(toString(number))) AS total FROM numbers({rows:UInt64}) SETTINGS max_threads = 1',
      params: { rows: 100_000_000 },
    });
  let readsEnded = 0;
  const reads = Array.from({ length: 4 }, () => asRead(Date.now() + 120_000, 0, long).then(() => (readsEnded += 1)));
  // A flush's insert or a health check, say: it does not wait for a read to end.
  const [row] = await app.stores.ch.query<{ one: number }>({ name: 'test.other', sql: 'SELECT 1 AS one', params: {} });
  expect(row.one).toBe(1);
  expect(readsEnded).toBe(0);
  await Promise.all(reads);
});
