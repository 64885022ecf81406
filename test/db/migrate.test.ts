// A migration's statements (src/db/migrate.ts) on the real engine: a table setting the server does not know is
// skipped with a warning, as an older ClickHouse server meets 0010's; any other failure stops the migration.
import pino from 'pino';
import { runClickHouseStatement } from '../../src/db/migrate';
import { startTestApp, type TestApp } from '../support/app';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
  await app.stores.ch.command('CREATE TABLE IF NOT EXISTS migrate_test (a UInt8) ENGINE = MergeTree ORDER BY a');
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

it('stops at any other failure', async () => {
  const { log } = keptLog();
  await expect(
    runClickHouseStatement(app.stores.ch, 'ALTER TABLE migrate_test ADD COLUMN b NoSuchType', log),
  ).rejects.toThrow();
  await expect(
    runClickHouseStatement(app.stores.ch, 'ALTER TABLE no_such_table MODIFY SETTING merge_with_ttl_timeout = 1', log),
  ).rejects.toThrow();
});
