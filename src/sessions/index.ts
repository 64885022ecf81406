// The sessions capability, assembled: the list of a window's sessions and one session with its runs.
import type { Clock } from '../clock';
import type { Config } from '../config';
import type { ClickHouseStore } from '../db/clickhouse';
import type { RetainedFrom } from '../retention/cutoffs';
import type { FlushBarrier } from '../runs/store';
import { sessionRoutes } from './routes';
import { sessionService } from './service';

export interface SessionsDependencies {
  ch: ClickHouseStore;
  clock: Clock;
  /** Reads see every run this instance acknowledged for the project: they wait for its flush. */
  flushed: FlushBarrier;
  /** Where a project's retained runs start: reads leave out older ones. */
  retainedFrom: RetainedFrom;
  config: Pick<Config, 'reportLimits'>;
}

export function createSessions({ ch, clock, flushed, retainedFrom, config }: SessionsDependencies) {
  const service = sessionService(ch, clock, config.reportLimits, retainedFrom);
  return { routes: sessionRoutes(service, flushed, clock) };
}
