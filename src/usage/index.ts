// The usage capability, assembled: spend and tokens over time, per agent or per model (docs/usage.md).
import type { Clock } from '../clock';
import type { Config } from '../config';
import type { ClickHouseStore } from '../db/clickhouse';
import type { RetainedFrom } from '../retention/cutoffs';
import type { FlushBarrier } from '../runs/store';
import { usageRoutes } from './routes';
import { usageService } from './service';

export interface UsageDependencies {
  ch: ClickHouseStore;
  clock: Clock;
  /** Reads see every run this instance acknowledged for the project: they wait for its flush. */
  flushed: FlushBarrier;
  /** Where a project's retained runs start: older runs are never counted. */
  retainedFrom: RetainedFrom;
  /** The time and memory limits of a report query, which these are. */
  config: Pick<Config, 'reportLimits'>;
}

export function createUsage({ ch, clock, flushed, retainedFrom, config }: UsageDependencies) {
  return { routes: usageRoutes(usageService(ch, clock, config.reportLimits, retainedFrom), flushed) };
}
