// The layout of report SQL. Statements are composed of named fragments (window-runs.ts, rollups.ts, signals.ts),
// and the golden files under test/reports show them as ClickHouse receives them: so a fragment is indented where it
// is placed, and the rendered statement reads like one written by hand. Layout only: no SQL here has a string
// literal spanning lines, so whitespace never changes what a statement means.

/** The indentation (spaces) of a text's last line. */
const lastIndentation = (text: string) => /^ */.exec(text.slice(text.lastIndexOf('\n') + 1))![0];

/**
 * A SQL template laid out: each line of an interpolated fragment is indented as the template's line it is placed
 * on, then the template's common indentation is removed, with trailing spaces and empty lines. A multi-line template
 * starts with a line break, so that its first line is indented as the rest.
 */
export function sql(template: TemplateStringsArray, ...fragments: readonly string[]): string {
  let text = template[0];
  let indentation = lastIndentation(template[0]);
  fragments.forEach((fragment, i) => {
    text += fragment.replaceAll('\n', `\n${indentation}`) + template[i + 1];
    if (template[i + 1].includes('\n')) indentation = lastIndentation(template[i + 1]);
  });
  const lines = text
    .split('\n')
    .map((line) => line.trimEnd())
    .filter((line) => line !== '');
  const margin = Math.min(...lines.map((line) => line.length - line.trimStart().length));
  return lines.map((line) => line.slice(margin)).join('\n');
}

/** `WHERE a AND b …`, or nothing without conditions. */
export const whereAll = (conditions: readonly string[]): string =>
  conditions.length > 0 ? `WHERE ${conditions.join(' AND ')}` : '';

/** `AND a`, a line for each condition (its own lines indented under it), to follow a WHERE. */
export const andEach = (conditions: readonly string[]): string =>
  conditions.map((condition) => `\n  AND ${condition.replaceAll('\n', '\n  ')}`).join('');
