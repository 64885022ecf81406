// The runs capability, assembled: reading one run back over HTTP, and the run store ingest looks runs up in.
import type { ClickHouseStore } from '../db/clickhouse';
import type { RetainedFrom } from '../retention/cutoffs';
import { runRoutes } from './routes';
import { runStore, type FlushBarrier } from './store';

export interface RunsDependencies {
  ch: ClickHouseStore;
  /** Reads see every run this instance acknowledged for the project: they wait for its flush. */
  flushed: FlushBarrier;
  /** Where a project's retained runs start: an older run reads as gone. */
  retainedFrom: RetainedFrom;
}

export function createRuns({ ch, flushed, retainedFrom }: RunsDependencies) {
  const store = runStore(ch);
  return { routes: runRoutes(store, flushed, retainedFrom), store };
}
