// ARCHITECTURE.md's "Who may import whom" is true: every import from one capability into another is in its table,
// every row of the table is an import the code makes, and the plumbing (db/, http/) imports no capability.
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const ROOT = path.resolve(__dirname, '..');
const SRC = path.join(ROOT, 'src');
// Imported by anyone; they import no capability themselves.
const SHARED = new Set(['db', 'http', 'clock', 'config', 'errors', 'ids', 'background', 'logger', 'chunks']);
// The wiring: they assemble the capabilities, so they import all of them.
const WIRING = new Set(['app', 'main', 'jobs', 'write-openapi']);

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return /\.tsx?$/.test(entry.name) ? [full] : [];
  });
}

/** A module's place under src/, without its extension or a trailing /index: `ingest/service`, `orgs`, `clock`. */
const modulePath = (file: string) =>
  path
    .relative(SRC, file)
    .replace(/\.tsx?$/, '')
    .replace(/\/index$/, '');

/** What a module belongs to: its top folder (a capability, db or http), or the top-level module itself. */
const areaOf = (module: string) => module.split('/')[0];

/** Every import between areas: importer area → imported module. */
function crossAreaImports(): Set<string> {
  const found = new Set<string>();
  for (const file of sourceFiles(SRC)) {
    const { importedFiles } = ts.preProcessFile(fs.readFileSync(file, 'utf8'), true, true);
    for (const { fileName } of importedFiles.filter((imported) => imported.fileName.startsWith('.'))) {
      const imported = modulePath(path.resolve(path.dirname(file), fileName) + '.ts');
      const [from, to] = [areaOf(modulePath(file)), areaOf(imported)];
      if (from !== to) found.add(`${from} → ${imported}`);
    }
  }
  return found;
}

/** The rows of the table under "## Who may import whom": `importer → imported module`. */
function allowedImports(): Set<string> {
  const text = fs.readFileSync(path.join(ROOT, 'ARCHITECTURE.md'), 'utf8');
  const section = text.split(/^## /m).find((part) => part.startsWith('Who may import whom'));
  const rows = [...(section ?? '').matchAll(/^\| (\w+) \| ([\w/-]+) \|/gm)].filter(
    ([, importer]) => importer !== 'importer',
  );
  return new Set(rows.map(([, importer, imported]) => `${importer} → ${imported}`));
}

const imports = crossAreaImports();
const betweenCapabilities = [...imports].filter((edge) => {
  const [from, to] = edge.split(' → ');
  return !WIRING.has(from) && !SHARED.has(from) && !SHARED.has(areaOf(to));
});

it('every import from one capability into another is listed in ARCHITECTURE.md', () => {
  const allowed = allowedImports();
  expect(allowed.size).toBeGreaterThan(10);
  expect(betweenCapabilities.filter((edge) => !allowed.has(edge)).sort()).toEqual([]);
});

it('every import ARCHITECTURE.md lists is one the code makes', () => {
  const made = new Set(betweenCapabilities);
  expect([...allowedImports()].filter((edge) => !made.has(edge)).sort()).toEqual([]);
});

it('the plumbing imports no capability: db/ only errors and config, http/ only db/ and shared modules', () => {
  const fromPlumbing = [...imports].filter((edge) => ['db', 'http'].includes(edge.split(' → ')[0]));
  const allowedFor = { db: ['errors', 'config'], http: [...SHARED] };
  const stray = fromPlumbing.filter((edge) => {
    const [from, to] = edge.split(' → ') as ['db' | 'http', string];
    return !allowedFor[from].includes(areaOf(to));
  });
  expect(stray).toEqual([]);
  expect(fromPlumbing).toContain('db → errors');
});
