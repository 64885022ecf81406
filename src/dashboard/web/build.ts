// Builds the dashboard into dist/web: one minified ES module and one stylesheet, named by their content's hash,
// and the index.html that loads them. esbuild (not Vite) because the app is a few hundred lines of Preact with
// no dev server to speak of: esbuild bundles it in well under a second, so `npm install` (the `prepare` script)
// builds it as a matter of course, and it is already in the tree (tsx runs on it).
import fs from 'node:fs';
import path from 'node:path';
import { build } from 'esbuild';
import { WEB_DIR } from '../serve';

const page = (script: string, stylesheet: string) => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>runwatch</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/assets/${stylesheet}">
<script type="module" src="/assets/${script}"></script>
</head>
<body><div id="app"></div></body>
</html>
`;

/** Writes a file whole or not at all: a page served meanwhile reads the old file or the new one. */
function writeAtomically(file: string, contents: Uint8Array | string): void {
  const temporary = `${file}.${process.pid}.${Date.now()}.tmp`;
  fs.writeFileSync(temporary, contents);
  fs.renameSync(temporary, file);
}

/**
 * Builds into `outDir` without ever leaving it empty: the assets are written first (content-hashed: a build of the
 * same code writes the same names), then index.html, then assets of earlier builds are removed. A service serving the
 * dashboard meanwhile (another test, a running `npm start`) never misses a file.
 */
export async function buildDashboard(outDir = WEB_DIR): Promise<{ scriptBytes: number }> {
  const assets = path.join(outDir, 'assets');
  const result = await build({
    entryPoints: [path.join(__dirname, 'main.tsx')],
    bundle: true,
    minify: true,
    format: 'esm',
    target: 'es2022',
    jsx: 'automatic',
    jsxImportSource: 'preact',
    outdir: assets,
    entryNames: '[name]-[hash]',
    write: false,
    legalComments: 'none',
    logLevel: 'warning',
  });
  fs.mkdirSync(assets, { recursive: true });
  for (const output of result.outputFiles) writeAtomically(output.path, output.contents);
  const names = result.outputFiles.map((output) => path.basename(output.path));
  const script = names.find((file) => file.endsWith('.js'))!;
  const stylesheet = names.find((file) => file.endsWith('.css'))!;
  writeAtomically(path.join(outDir, 'index.html'), page(script, stylesheet));
  // A concurrent build's file being written (.tmp) is its own to rename.
  for (const file of fs.readdirSync(assets))
    if (!names.includes(file) && !file.endsWith('.tmp')) fs.rmSync(path.join(assets, file), { force: true });
  return { scriptBytes: fs.statSync(path.join(assets, script)).size };
}

if (require.main === module) {
  buildDashboard().then(
    ({ scriptBytes }) =>
      console.log(`dashboard built into ${path.relative(process.cwd(), WEB_DIR)} (${scriptBytes} bytes of JavaScript)`),
    (error) => {
      console.error(error);
      process.exit(1);
    },
  );
}
