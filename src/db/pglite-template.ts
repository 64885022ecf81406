// The embedded Postgres's template: a data directory initialized once, by `npm run build`, and copied into an empty
// DATA_DIR at start-up. PGlite's own initdb takes ~2 s and leaves ~450 MB of WebAssembly memory to the garbage
// collector; the copy takes ~50 ms. Without a template (the code run from src/ before any build) PGlite initializes.
import fs from 'node:fs';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';

/** The installed PGlite's version: a data directory is valid only for the engine that made it. */
function pgliteVersion(): string {
  const packageFile = path.join(path.dirname(require.resolve('@electric-sql/pglite')), '..', 'package.json');
  return (JSON.parse(fs.readFileSync(packageFile, 'utf8')) as { version: string }).version;
}

/** dist/pglite-template-<version>, found from dist/db (the built service) and from src/db (tests, tsx) alike. */
export const TEMPLATE_DIR = path.resolve(__dirname, '..', '..', 'dist', `pglite-template-${pgliteVersion()}`);

const isEmpty = (directory: string) => !fs.existsSync(directory) || fs.readdirSync(directory).length === 0;

/** Makes an empty or missing `directory` a copy of the template, when there is one; true when it did. */
export function copyTemplate(directory: string): boolean {
  if (!isEmpty(directory) || !fs.existsSync(TEMPLATE_DIR)) return false;
  // Copied beside it, then renamed into place (over an empty directory): a stop mid-copy leaves no half database.
  const staging = `${directory}.copying`;
  fs.rmSync(staging, { recursive: true, force: true });
  fs.cpSync(TEMPLATE_DIR, staging, { recursive: true });
  fs.renameSync(staging, directory);
  return true;
}

/** Runs PGlite's initdb into the template's place (`npm run build`). */
async function buildTemplate(): Promise<void> {
  const staging = `${TEMPLATE_DIR}.building`;
  fs.rmSync(staging, { recursive: true, force: true });
  fs.mkdirSync(staging, { recursive: true });
  await (await PGlite.create(staging)).close();
  fs.rmSync(TEMPLATE_DIR, { recursive: true, force: true });
  fs.renameSync(staging, TEMPLATE_DIR);
}

if (require.main === module) {
  buildTemplate().catch((error: unknown) => {
    process.stderr.write(`the PGlite template was not built: ${(error as Error).stack ?? String(error)}\n`);
    process.exit(1);
  });
}
