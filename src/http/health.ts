// Liveness (the process answers) and readiness (both stores answer) probes.
import { z } from 'zod';
import type { Stores } from '../db/stores';
import { StoreUnavailableError } from './errors';
import { defineRoute } from './route';

const PROBE_TIMEOUT_MS = 2000;

async function answers(probe: () => Promise<unknown>): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), PROBE_TIMEOUT_MS)));
  const ok = probe().then((result) => result !== false, () => false);
  return Promise.race([ok, timeout]).finally(() => clearTimeout(timer));
}

export function healthRoutes(stores: Stores) {
  const tag = 'Health';
  return [
    defineRoute({
      method: 'get', path: '/healthz', tag, summary: 'The process is up', auth: { kind: 'public' },
      response: z.object({ status: z.literal('ok') }),
      handler: async () => ({ status: 'ok' as const }),
    }),
    defineRoute({
      method: 'get', path: '/readyz', tag, summary: 'Both stores answer; 503 otherwise', auth: { kind: 'public' },
      response: z.object({ status: z.literal('ready') }),
      handler: async () => {
        const [postgres, clickhouse] = await Promise.all([answers(() => stores.pg.query('SELECT 1')), answers(() => stores.ch.ping())]);
        if (!postgres) throw new StoreUnavailableError('postgres', 'no answer');
        if (!clickhouse) throw new StoreUnavailableError('clickhouse', 'no answer');
        return { status: 'ready' as const };
      },
    }),
  ];
}
