// Which Postgres failures are the store being unavailable (503) and which stay what they are (a bug is a 500, a
// conflict a 409): a statement over DATABASE_QUERY_TIMEOUT_MS is cancelled by the server (57014) and is a 503; a bad
// statement or a unique violation is not. On the Postgres server: PGlite has no statement timeout (its full disk is
// test/process/full-disk.test.ts).
import os from 'node:os';
import { StoreUnavailableError } from '../../src/errors';
import { openPostgres, type PostgresStore } from '../../src/db/postgres';

const url = process.env.DATABASE_URL;

(url ? describe : describe.skip)('Postgres errors (DATABASE_URL)', () => {
  let pg: PostgresStore;
  beforeAll(async () => {
    pg = await openPostgres({ url, dataDir: os.tmpdir(), timeouts: { connectMs: 3000, queryMs: 200 } });
  });
  afterAll(() => pg.close());

  it('a statement the server cancels at the query timeout is a 503 with Retry-After; the pool goes on', async () => {
    const error = await pg.query('SELECT pg_sleep(1)').catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect(error).toMatchObject({
      status: 503,
      code: 'unavailable',
      headers: { 'Retry-After': '5' },
      cause: { code: '57014' },
    });
    expect(await pg.query('SELECT 1 AS one')).toEqual([{ one: 1 }]);
  });

  it('in a transaction too; its connection is dropped, not rolled back, and the next transaction works', async () => {
    const error = await pg.transaction((tx) => tx.query('SELECT pg_sleep(1)')).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect(await pg.transaction((tx) => tx.query('SELECT 2 AS two'))).toEqual([{ two: 2 }]);
  });

  it.each([
    ['a bad statement', 'SELECT * FROM no_such_table', '42P01'],
    ['a division by zero', 'SELECT 1/0', '22012'],
    ['a unique violation', 'INSERT INTO unique_numbers VALUES (1), (1)', '23505'],
  ])(
    '%s stays the error it is (a 500, or what its caller makes of it), and its transaction rolls back',
    async (_name, sql, code) => {
      const error = await pg
        .transaction(async (tx) => {
          await tx.query('CREATE TEMPORARY TABLE unique_numbers (n int PRIMARY KEY) ON COMMIT DROP');
          return tx.query(sql);
        })
        .catch((caught: unknown) => caught);
      expect(error).not.toBeInstanceOf(StoreUnavailableError);
      expect(error).toMatchObject({ code });
      expect(await pg.transaction((tx) => tx.query('SELECT 3 AS three'))).toEqual([{ three: 3 }]);
    },
  );
});
