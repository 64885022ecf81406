// Opens both stores for the configuration (real servers or embedded engines) and brings their schemas up to date.
import type { Logger } from 'pino';
import type { Config } from '../config';
import { openClickHouse, type ClickHouseStore } from './clickhouse';
import { migrate } from './migrate';
import { openPostgres, type PostgresStore } from './postgres';

export interface Stores {
  pg: PostgresStore;
  ch: ClickHouseStore;
}

export async function openStores(
  config: Pick<Config, 'databaseUrl' | 'postgresTimeouts' | 'clickhouse' | 'dataDir'>,
  log: Logger,
): Promise<Stores> {
  // Together: PGlite compiles its WebAssembly while chdb loads its library.
  const [pg, ch] = await Promise.all([
    openPostgres({ url: config.databaseUrl, dataDir: config.dataDir, timeouts: config.postgresTimeouts }),
    openClickHouse({ server: config.clickhouse, dataDir: config.dataDir }),
  ]);
  log.info(
    { postgres: config.databaseUrl ? 'server' : 'embedded', clickhouse: config.clickhouse ? 'server' : 'embedded' },
    'stores opened',
  );
  await migrate(pg, ch, log);
  return { pg, ch };
}

export async function closeStores(stores: Stores): Promise<void> {
  await Promise.allSettled([stores.pg.close(), stores.ch.close()]);
}
