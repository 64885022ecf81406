// The alerts capability, assembled: rule endpoints, the aggregate evaluator, the per_run hook for ingest and the
// notifier that sends what they queue.
import type { Logger } from 'pino';
import type { JobLeases } from '../background';
import type { Clock } from '../clock';
import type { Config } from '../config';
import type { PostgresStore } from '../db/postgres';
import { alertEvaluator, startAlertEvaluator } from './evaluator';
import { createNotifier } from './notify/worker';
import { perRunAlerts } from './per-run';
import { alertRoutes } from './routes';
import { alertRuleService, type ReadScoreMean, type ReadSignal, type SignalSource } from './service';
import { urlPolicy } from './url-safety';

/**
 * What alerts read of the reports: every signal of some scopes (a round), one signal of one scope (a preview); and of
 * the scores, the score_mean of a scope.
 */
export interface AlertSignals extends SignalSource {
  readSignal: ReadSignal;
  readScoreMean: ReadScoreMean;
}

export interface AlertsDependencies {
  pg: PostgresStore;
  clock: Clock;
  log: Logger;
  /** As of every run this instance acknowledged for the project, within its retention (the reports' reads). */
  signals: AlertSignals;
  /** WEBHOOK_DENY_PRIVATE and WEBHOOK_ALLOW_HOSTS for rules and deliveries; PUBLIC_URL for notifications' links. */
  config: Pick<Config, 'webhookDenyPrivate' | 'webhookAllowHosts' | 'publicUrl'>;
}

export function createAlerts({ pg, clock, log, signals, config }: AlertsDependencies) {
  const alertsLog = log.child({ component: 'alerts' });
  const perRun = perRunAlerts({ pg, clock, log: alertsLog });
  const rules = alertRuleService({
    pg,
    clock,
    readSignal: signals.readSignal,
    readScoreMean: signals.readScoreMean,
    urlPolicy: urlPolicy(config.webhookDenyPrivate, config.webhookAllowHosts),
    rulesChanged: perRun.forgetRules,
  });
  const evaluator = alertEvaluator({ pg, signals, readScoreMean: signals.readScoreMean, log: alertsLog });
  return {
    routes: alertRoutes(rules),
    /** The ingest hook: per_run rules are checked as runs finish and loops are found. */
    events: perRun.events,
    /** One evaluation round of every enabled aggregate rule at `at` (tests pass the manual clock's now). */
    evaluateRound: evaluator.evaluateRound,
    /** Resolves when every reported run has been checked against the per_run rules. */
    idle: perRun.idle,
    /** Runs rounds every `intervalSeconds` with `clock` (under `leases`, once per deployment); returns its stop. */
    startEvaluator: (options: {
      intervalSeconds: number;
      clock: Clock;
      leases?: JobLeases;
      projectIds?: readonly string[];
    }) => startAlertEvaluator({ evaluator, log, ...options }),
    /** Sends queued notifications; main.ts runs it on an interval, tests call notifier.deliverDue(now). */
    notifier: createNotifier({ pg, clock, log, config }),
  };
}
