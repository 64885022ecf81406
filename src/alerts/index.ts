// The alerts capability, assembled: rule endpoints, the aggregate evaluator and the per_run hook for ingest.
import type { Logger } from 'pino';
import type { Clock } from '../clock';
import type { QueryLimits } from '../db/clickhouse';
import type { Stores } from '../db/stores';
import { signalReader } from '../reports/signals';
import { alertEvaluator, startAlertEvaluator } from './evaluator';
import { perRunAlerts } from './per-run';
import { alertRoutes } from './routes';
import type { FlushBarrier } from '../runs/store';
import { alertRuleService, type SignalSource } from './service';

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
}

export function createAlerts({ stores, clock, log, queryLimits, denyPrivateUrls, flushed }: AlertsDependencies) {
  const reader = signalReader(stores.ch, queryLimits);
  // Previews and rounds see every run this instance acknowledged for the project, as the reports do.
  const signals: SignalSource = {
    readSignals: async (projectId, scopes, at) => {
      await flushed(projectId);
      return reader.readSignals(projectId, scopes, at);
    },
  };
  const perRun = perRunAlerts({ pg: stores.pg, clock, log: log.child({ component: 'alerts' }) });
  const rules = alertRuleService({ pg: stores.pg, clock, signals, denyPrivateUrls, rulesChanged: perRun.forgetRules });
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

