// A migration's statements (src/db/migrate.ts) on the real engine: a table setting the server does not know is
// skipped with a warning, as an older ClickHouse server meets 0010's, and so is a text index it cannot add (0012's,
// before ClickHouse 26.2) with its materialization; any other failure stops the migration.
import pino from 'pino';
import { runClickHouseStatement } from '../../src/db/migrate';
import { startTestApp, type TestApp } from '../support/app';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
  await app.stores.ch.command(
    'CREATE TABLE IF NOT EXISTS migrate_test (a UInt8, s Array(String)) ENGINE = MergeTree ORDER BY a',
  );
});
afterAll(async () => {
  await app.stores.ch.command('DROP TABLE IF EXISTS migrate_test');
  await app.close();
});

/** A logger whose lines are kept. */
function keptLog() {
  const lines: { msg: string; statement?: string }[] = [];
  const log = pino({ level: 'warn' }, { write: (line: string) => lines.push(JSON.parse(line)) });
  return { log, lines };
}

it('skips a table setting the server does not know, with a warning', async () => {
  const { log, lines } = keptLog();
  const statement = 'ALTER TABLE migrate_test MODIFY SETTING a_setting_of_a_future_server = 1';
  await expect(runClickHouseStatement(app.stores.ch, statement, log)).resolves.toBeUndefined();
  expect(lines).toEqual([expect.objectContaining({ statement, msg: expect.stringContaining('does not know') })]);
});

it('applies a setting the server knows', async () => {
  const { log } = keptLog();
  await runClickHouseStatement(
    app.stores.ch,
    'ALTER TABLE migrate_test MODIFY SETTING merge_with_ttl_timeout = 3600',
    log,
  );
  const [table] = await app.stores.ch.query<{ engine_full: string }>({
    name: 'test.engine',
    sql: "SELECT engine_full FROM system.tables WHERE database = currentDatabase() AND name = 'migrate_test'",
  });
  expect(table.engine_full).toContain('merge_with_ttl_timeout = 3600');
});

/** The skip indexes of migrate_test, by name. */
const indexes = async () =>
  (
    await app.stores.ch.query<{ name: string }>({
      name: 'test.indexes',
      sql: `SELECT name FROM system.data_skipping_indices
            WHERE database = currentDatabase() AND table = 'migrate_test'`,
    })
  ).map((row) => row.name);

it('skips a text index the server cannot add, and its materialization, with a warning', async () => {
  const { log, lines } = keptLog();
  // A tokenizer no server knows stands for a server that has no text index.
  const add = 'ALTER TABLE migrate_test ADD INDEX IF NOT EXISTS s_refused s TYPE text(tokenizer = no_such_tokenizer)';
  const materialize = 'ALTER TABLE migrate_test MATERIALIZE INDEX s_refused SETTINGS mutations_sync = 1';
  await expect(runClickHouseStatement(app.stores.ch, add, log)).resolves.toBeUndefined();
  // This engine materializes an index that is not there as nothing; a server that refuses it has the statement
  // skipped, with a warning that the index was not added.
  await expect(runClickHouseStatement(app.stores.ch, materialize, log)).resolves.toBeUndefined();
  expect(lines[0]).toEqual(
    expect.objectContaining({ statement: add, msg: expect.stringContaining('cannot add this text index') }),
  );
  expect(await indexes()).not.toContain('s_refused');
});

it('adds a text index the server can, and materializes it', async () => {
  const { log, lines } = keptLog();
  await app.stores.ch.command("INSERT INTO migrate_test VALUES (1, ['x', 'y'])");
  await runClickHouseStatement(
    app.stores.ch,
    'ALTER TABLE migrate_test ADD INDEX IF NOT EXISTS s_text s TYPE text(tokenizer = array)',
    log,
  );
  await runClickHouseStatement(
    app.stores.ch,
    'ALTER TABLE migrate_test MATERIALIZE INDEX s_text SETTINGS mutations_sync = 1',
    log,
  );
  expect(lines).toEqual([]);
  expect(await indexes()).toContain('s_text');
});

it('stops at any other failure', async () => {
  const { log } = keptLog();
  await expect(
    runClickHouseStatement(app.stores.ch, 'ALTER TABLE migrate_test ADD COLUMN b NoSuchType', log),
  ).rejects.toThrow();
  await expect(
    runClickHouseStatement(app.stores.ch, 'ALTER TABLE no_such_table MODIFY SETTING merge_with_ttl_timeout = 1', log),
  ).rejects.toThrow();
  // An index that is there, materialized on a table that is not.
  await runClickHouseStatement(
    app.stores.ch,
    'ALTER TABLE migrate_test ADD INDEX IF NOT EXISTS a_minmax a TYPE minmax',
    log,
  );
  await expect(
    runClickHouseStatement(app.stores.ch, 'ALTER TABLE no_such_table MATERIALIZE INDEX a_minmax', log),
  ).rejects.toThrow();
});
