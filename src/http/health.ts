// Liveness (the process answers) and readiness (both stores answer) probes.
import { z } from 'zod';
import type { Stores } from '../db/stores';
import { AppError, StoreUnavailableError } from './errors';
import { defineRoute } from './route';

const PROBE_TIMEOUT_MS = 2000;

async function answers(probe: () => Promise<unknown>): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), PROBE_TIMEOUT_MS)));
  const ok = probe().then((result) => result !== false, () => false);
  return Promise.race([ok, timeout]).finally(() => clearTimeout(timer));
}

const backlogSchema = z.object({ rows: z.number().int(), bytes: z.number().int(), oldest_age_ms: z.number().int() });

/** Whether ingest is ready to serve (its log replayed into ClickHouse), and its backlog, which /readyz shows. */
export interface IngestReadiness {
  ready: boolean;
  reason: string;
  backlog: z.infer<typeof backlogSchema>;
}

export function healthRoutes(stores: Stores, ingestReadiness: () => IngestReadiness) {
  const tag = 'Health';
  return [
    defineRoute({
      method: 'get', path: '/healthz', tag, summary: 'The process is up', auth: { kind: 'public' },
      response: z.object({ status: z.literal('ok') }),
      handler: async () => ({ status: 'ok' as const }),
    }),
    defineRoute({
      method: 'get', path: '/readyz', tag,
      summary: 'Both stores answer and the ingest log replayed at start-up is flushed; 503 otherwise. Shows the ingest backlog',
      auth: { kind: 'public' },
      response: z.object({ status: z.literal('ready'), ingest_backlog: backlogSchema }),
      handler: async () => {
        const [postgres, clickhouse] = await Promise.all([answers(() => stores.pg.query('SELECT 1')), answers(() => stores.ch.ping())]);
        if (!postgres) throw new StoreUnavailableError('postgres', 'no answer');
        if (!clickhouse) throw new StoreUnavailableError('clickhouse', 'no answer');
        const ingest = ingestReadiness();
        if (!ingest.ready) throw new AppError(503, 'unavailable', ingest.reason, [], { 'Retry-After': '1' });
        return { status: 'ready' as const, ingest_backlog: ingest.backlog };
      },
    }),
  ];
}
