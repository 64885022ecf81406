// The alerts capability, assembled: rule endpoints, the aggregate evaluator and the per_run hook for ingest.
import type { Logger } from 'pino';
import type { Clock } from '../clock';
import type { QueryLimits } from '../db/clickhouse';
import type { Stores } from '../db/stores';
import { reportService } from '../reports/service';
import { SIGNAL_SAMPLE, signalReader } from '../reports/signals';
import { alertEvaluator, startAlertEvaluator } from './evaluator';
import { perRunAlerts } from './per-run';
import { alertRoutes } from './routes';
import type { RetainedFrom } from '../retention/cutoffs';
import type { FlushBarrier } from '../runs/store';
import { alertRuleService, type ReadSignal, type SignalSource } from './service';

export interface AlertsDependencies {
  stores: Stores;
  clock: Clock;
  log: Logger;
  /** The time and memory limits of the signal queries (the reports' limits). */
  queryLimits: QueryLimits;
  /** WEBHOOK_DENY_PRIVATE */
  denyPrivateUrls: boolean;
  /** Resolves once what this instance acknowledged for the project is in ClickHouse. */
  flushed: FlushBarrier;
  /** Where a project's retained runs start: signals leave out older ones. */
  retainedFrom: RetainedFrom;
}

export function createAlerts({
  stores,
  clock,
  log,
  queryLimits,
  denyPrivateUrls,
  flushed,
  retainedFrom,
}: AlertsDependencies) {
  const reader = signalReader(stores.ch, queryLimits);
  // Previews and rounds see every run this instance acknowledged for the project, as the reports do.
  const signals: SignalSource = {
    readSignals: async (projectId, scopes, at) => {
      await flushed(projectId);
      return reader.readSignals(projectId, scopes, at, await retainedFrom(projectId));
    },
  };
  // The preview reads its one signal with the summary's query over its window: the summary's field, fast.
  const reports = reportService(stores.ch, clock, queryLimits, retainedFrom);
  const readSignal: ReadSignal = async (projectId, scope, signal, at) => {
    await flushed(projectId);
    const window = { from: new Date(at.getTime() - scope.windowSeconds * 1000), to: at };
    const sample = SIGNAL_SAMPLE[signal];
    const measures = await reports.windowMeasures(
      projectId,
      window,
      [...new Set([signal, sample])],
      scope.agentName ?? undefined,
    );
    return { value: measures[signal], sampleCount: measures[sample] };
  };
  const perRun = perRunAlerts({ pg: stores.pg, clock, log: log.child({ component: 'alerts' }) });
  const rules = alertRuleService({
    pg: stores.pg,
    clock,
    readSignal,
    denyPrivateUrls,
    rulesChanged: perRun.forgetRules,
  });
  const evaluator = alertEvaluator({ pg: stores.pg, signals, log: log.child({ component: 'alerts' }) });
  return {
    routes: alertRoutes(rules),
    /** The ingest hook: per_run rules are checked as runs finish and loops are found. */
    events: perRun.events,
    /** One evaluation round of every enabled aggregate rule at `at` (tests pass the manual clock's now). */
    evaluateRound: evaluator.evaluateRound,
    /** Resolves when every reported run has been checked against the per_run rules. */
    idle: perRun.idle,
    /** Runs rounds every `intervalSeconds` with `clock`; returns the stop function. */
    startEvaluator: (options: { intervalSeconds: number; clock: Clock }) =>
      startAlertEvaluator({ evaluator, clock: options.clock, log, intervalSeconds: options.intervalSeconds }),
  };
}
