// Liveness (the process answers) and readiness (both stores answer, the local disk takes writes) probes.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { within } from '../clock';
import type { Config } from '../config';
import type { Stores } from '../db/stores';
import { AppError, StoreUnavailableError } from '../errors';
import { defineRoute } from './route';
import { count } from './schemas';

const PROBE_TIMEOUT_MS = 2000;

const answers = (probe: () => Promise<unknown>): Promise<boolean> =>
  within(
    PROBE_TIMEOUT_MS,
    probe().then(
      (result) => result !== false,
      () => false,
    ),
    false,
  );

/** The local directories writes go to: the ingest log's, and DATA_DIR when a store is embedded there. */
function writtenDirectories({
  dataDir,
  databaseUrl,
  clickhouse,
  ingestLog,
}: Pick<Config, 'dataDir' | 'databaseUrl' | 'clickhouse' | 'ingestLog'>): string[] {
  const embedded = databaseUrl === undefined || clickhouse === undefined;
  return [...(ingestLog ? [ingestLog.directory] : []), ...(embedded ? [dataDir] : [])];
}

/** Writes, syncs and removes a small file: a full disk or a read-only mount fails it as it fails every write there. */
async function probeWrite(directory: string): Promise<void> {
  const file = path.join(directory, `.write-probe-${randomBytes(4).toString('hex')}`);
  try {
    const handle = await fs.promises.open(file, 'wx');
    try {
      await handle.writeFile('probe');
      await handle.sync();
    } finally {
      await handle.close();
    }
  } finally {
    await fs.promises.rm(file, { force: true });
  }
}

const backlogSchema = z.object({ rows: count, bytes: count, oldest_age_ms: count });

/** Whether ingest is ready to serve (its log replayed into ClickHouse), and its backlog, which /readyz shows. */
export interface IngestReadiness {
  ready: boolean;
  reason: string;
  backlog: z.infer<typeof backlogSchema>;
}

export function healthRoutes(
  stores: Stores,
  ingestReadiness: () => IngestReadiness,
  config: Parameters<typeof writtenDirectories>[0],
) {
  const tag = 'Health';
  const directories = writtenDirectories(config);
  // Route declarations are a table: the route, then its checks and schemas, then its handler, a line or two each.
  // prettier-ignore
  return [
    defineRoute({
      method: 'get', path: '/healthz', operationId: 'checkLiveness', tag, summary: 'The process is up',
      auth: { kind: 'public' }, response: z.object({ status: z.literal('ok') }),
      handler: async () => ({ status: 'ok' as const }),
    }),
    defineRoute({
      method: 'get', path: '/readyz', operationId: 'checkReadiness', tag,
      summary:
        'Both stores answer, the data directories take writes and the ingest log replayed at start-up is flushed; ' +
        '503 otherwise. Shows the ingest backlog',
      auth: { kind: 'public' }, errors: [503],
      response: z.object({ status: z.literal('ready'), ingest_backlog: backlogSchema }),
      handler: async () => {
        const [postgres, clickhouse, ...writable] = await Promise.all([
          answers(() => stores.pg.query('SELECT 1')),
          answers(() => stores.ch.ping()),
          ...directories.map((directory) => answers(() => probeWrite(directory))),
        ]);
        if (!postgres) throw new StoreUnavailableError('postgres', 'no answer');
        if (!clickhouse) throw new StoreUnavailableError('clickhouse', 'no answer');
        // Every write would fail (a full disk, a read-only mount), though the stores still answer reads.
        if (writable.includes(false))
          throw new AppError(503, 'unavailable', 'the data directory cannot be written', [], { 'Retry-After': '5' });
        const ingest = ingestReadiness();
        if (!ingest.ready) throw new AppError(503, 'unavailable', ingest.reason, [], { 'Retry-After': '1' });
        return { status: 'ready' as const, ingest_backlog: ingest.backlog };
      },
    }),
  ];
}
