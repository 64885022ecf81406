// Writes the OpenAPI document to the file named on the command line (`npm run lint:openapi` lints it): built from
// the route declarations of the app, as GET /openapi.json serves it, without opening any store.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import pino from 'pino';
import { createApp } from './app';
import { systemClock } from './clock';
import { loadConfig } from './config';
import type { Stores } from './db/stores';
import { buildOpenApiDocument } from './http/openapi';

// Declaring routes asks no store anything: a store used here is a bug, reported as such.
const noStore = new Proxy(
  {},
  {
    get: (_target, key) => {
      throw new Error(`building the OpenAPI document used a store (${String(key)})`);
    },
  },
);
// No ingest log and no decoding workers: nothing to open, nothing left running.
const config = loadConfig({ INGEST_LOG: 'off', OTLP_DECODE_WORKERS: '0' });
const { routes } = createApp({
  config,
  stores: { pg: noStore, ch: noStore } as Stores,
  clock: systemClock,
  log: pino({ level: 'silent' }),
  jwtSecret: 'no session is signed here',
});

const file = process.argv[2];
mkdirSync(dirname(file), { recursive: true });
writeFileSync(file, `${JSON.stringify(buildOpenApiDocument(routes), null, 2)}\n`);
