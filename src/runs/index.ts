// The runs capability, assembled: reading one run back over HTTP, and the run store ingest looks runs up in.
import type { ClickHouseStore } from '../db/clickhouse';
import { runRoutes } from './routes';
import { runStore, type FlushBarrier } from './store';

export interface RunsDependencies {
  ch: ClickHouseStore;
  /** Reads see every run this instance acknowledged for the project: they wait for its flush. */
  flushed: FlushBarrier;
}

export function createRuns({ ch, flushed }: RunsDependencies) {
  const store = runStore(ch);
  return { routes: runRoutes(store, flushed), store };
}
