// The reports capability, assembled: the report endpoints, and the signal readings alerts evaluate and preview.
import type { Clock } from '../clock';
import type { Config } from '../config';
import type { ClickHouseStore } from '../db/clickhouse';
import type { RetainedFrom } from '../retention/cutoffs';
import type { FlushBarrier } from '../runs/store';
import { reportRoutes } from './routes';
import { reportService } from './service';
import { signalReader } from './signal-reader';
import { SIGNAL_SAMPLE, type AggregateSignal, type SignalScope } from './signals';

export interface ReportsDependencies {
  ch: ClickHouseStore;
  clock: Clock;
  /** Reads see every run this instance acknowledged for the project: they wait for its flush. */
  flushed: FlushBarrier;
  /** Where a project's retained runs start: reads leave out older ones. */
  retainedFrom: RetainedFrom;
  /** The time and memory limits of every report and signal query. */
  config: Pick<Config, 'reportLimits' | 'reportRawMaxRuns'>;
}

export function createReports({ ch, clock, flushed, retainedFrom, config }: ReportsDependencies) {
  const reports = reportService(ch, clock, config.reportLimits, retainedFrom, config.reportRawMaxRuns);
  const reader = signalReader(ch, config.reportLimits);
  return {
    routes: reportRoutes(reports, flushed),
    /** Every signal of each scope over [at − window, at), in one query: an alert round's reading of a project. */
    async readSignals(projectId: string, scopes: readonly SignalScope[], at: Date) {
      await flushed(projectId);
      return reader.readSignals(projectId, scopes, at, await retainedFrom(projectId));
    },
    /** One signal of one scope over [at − window, at), by the summary's query: the alert preview's, fast. */
    async readSignal(projectId: string, scope: SignalScope, signal: AggregateSignal, at: Date) {
      await flushed(projectId);
      const window = { from: new Date(at.getTime() - scope.windowSeconds * 1000), to: at };
      const sample = SIGNAL_SAMPLE[signal];
      const measures = await reports.windowMeasures(projectId, window, [...new Set([signal, sample])], {
        agent_name: scope.agentName ?? undefined,
        user_id: scope.userId ?? undefined,
      });
      return { value: measures[signal], sampleCount: measures[sample] };
    },
  };
}
