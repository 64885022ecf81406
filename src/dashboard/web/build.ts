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

export async function buildDashboard(outDir = WEB_DIR): Promise<{ scriptBytes: number }> {
  fs.rmSync(outDir, { recursive: true, force: true });
  const result = await build({
    entryPoints: [path.join(__dirname, 'main.tsx')],
    bundle: true,
    minify: true,
    format: 'esm',
    target: 'es2022',
    jsx: 'automatic',
    jsxImportSource: 'preact',
    outdir: path.join(outDir, 'assets'),
    entryNames: '[name]-[hash]',
    metafile: true,
    legalComments: 'none',
    logLevel: 'warning',
  });
  const outputs = Object.keys(result.metafile.outputs).map((file) => path.basename(file));
  const script = outputs.find((file) => file.endsWith('.js'))!;
  const stylesheet = outputs.find((file) => file.endsWith('.css'))!;
  fs.writeFileSync(path.join(outDir, 'index.html'), page(script, stylesheet));
  return { scriptBytes: fs.statSync(path.join(outDir, 'assets', script)).size };
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
