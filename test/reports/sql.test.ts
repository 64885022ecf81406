// The layout of report SQL (src/reports/sql.ts): a fragment is indented where it is placed; whitespace only.
import { andEach, sql } from '../../src/reports/sql';

const subquery = sql`
  SELECT a
  FROM t`;

it.each([
  [
    'drops the common indentation and empty lines',
    sql`
      SELECT 1

      FROM t`,
    'SELECT 1\nFROM t',
  ],
  [
    'indents a fragment as its line',
    sql`
    SELECT *
    FROM (
      ${subquery}
    )`,
    'SELECT *\nFROM (\n  SELECT a\n  FROM t\n)',
  ],
  [
    'indents a fragment after another on its line as that line',
    sql`
    WHERE ${'x = 1\n  AND y = 2'}${andEach(['z = 3'])}
    GROUP BY x`,
    'WHERE x = 1\n  AND y = 2\n  AND z = 3\nGROUP BY x',
  ],
  [
    'drops trailing spaces',
    sql`
    FROM t ${''}`,
    'FROM t',
  ],
])('%s', (_label, rendered, expected) => {
  expect(rendered).toBe(expected);
});
