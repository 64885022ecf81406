// Serves the dashboard (built into dist/web by `npm run build:web`, which `npm install` runs): index.html at `/`,
// and its content-hashed assets under /assets, cached for good. The page may talk to this origin only.
import fs from 'node:fs';
import path from 'node:path';
import express, { type Request, type Router } from 'express';
import type { LoopThresholds } from '../ingest/loops';

// Where `npm run build:web` writes the dashboard: the same place from src/dashboard (tsx) and from dist/dashboard
// (the build).
export const WEB_DIR = path.resolve(__dirname, '../../dist/web');

// Everything comes from this origin. (Preact and uPlot set styles through the CSSOM, which style-src allows.)
const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'self'",
].join('; ');

/** What the page is told of the deployment, in `<body data-settings>` (JSON): what no API answers. */
export interface PageSettings {
  loopThresholds: LoopThresholds;
}

/** An HTML attribute's value: JSON, escaped. */
const attribute = (value: unknown) =>
  JSON.stringify(value).replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');

/**
 * The router of the dashboard's page and assets. The page is told whether the request's session cookie is live
 * (`<body data-session>`), so that a signed-out visitor goes straight to sign in, without a 401 in the console, and
 * the deployment's settings it shows (`<body data-settings>`).
 */
export function dashboardRouter(
  hasSession: (req: Request) => Promise<boolean>,
  settings: PageSettings,
  directory = WEB_DIR,
): Router {
  const router = express.Router();
  const index = path.join(directory, 'index.html');
  router.get('/', async (req, res, next) => {
    try {
      if (!fs.existsSync(index)) {
        res
          .status(404)
          .type('text/plain')
          .send('The dashboard is not built: run `npm run build:web` (npm install runs it).\n');
        return;
      }
      const page = (await fs.promises.readFile(index, 'utf8')).replace(
        '<body>',
        `<body data-session="${(await hasSession(req)) ? 'live' : 'none'}" data-settings="${attribute(settings)}">`,
      );
      res.set({
        'Content-Security-Policy': CONTENT_SECURITY_POLICY,
        'Cache-Control': 'no-store',
        'X-Content-Type-Options': 'nosniff',
      });
      res.type('html').send(page);
    } catch (error) {
      next(error);
    }
  });
  router.use(
    '/assets',
    express.static(path.join(directory, 'assets'), { immutable: true, maxAge: '1y', index: false }),
  );
  return router;
}
