// The aggregate-rule evaluator: one round evaluates every enabled aggregate rule at time t over [t − window, t),
// one signal query per project, under a Postgres advisory lock so that one instance evaluates at a time.
import type { Logger } from 'pino';
import { mapLimited, onceAcrossInstances, runEvery, type JobLeases } from '../background';
import type { Clock } from '../clock';
import type { PostgresStore, Sql } from '../db/postgres';
import { scopeKey, type SignalReading, type SignalReadings, type SignalScope } from '../reports/signals';
import { recordFiring, recordResolution, type EventReason } from './episodes';
import { compare, isScoreSignal, scoreNameOf, type AggregateRuleSignal } from './allowed-values';
import * as q from './queries';
import type { AlertRuleRow } from './rows';
import type { ReadScoreMean, SignalSource } from './service';
import { transition, type CooldownState, type EvaluationOutcome, type EvaluationState } from './state-machine';

export interface RoundResult {
  /** Another instance held the evaluator lock: this round did nothing. */
  skipped: boolean;
  rules: number;
  projects: number;
  /** Rules whose project's signal query failed (ERROR). */
  errors: number;
  events: number;
}

interface Reading {
  outcome: EvaluationOutcome;
  value: number | null;
  sampleCount: number | null;
  error: string | null;
}

export interface EvaluatorDependencies {
  pg: PostgresStore;
  signals: SignalSource;
  readScoreMean: ReadScoreMean;
  log: Logger;
  /** How many projects' signal queries run at once. */
  concurrency?: number;
}

const errorMessage = (error: unknown): string =>
  String((error as Error)?.message ?? error)
    .split('\n')[0]
    .slice(0, 1000);

const scopeOf = (rule: AlertRuleRow): SignalScope => ({
  agentName: rule.agent_name,
  userId: rule.user_id,
  windowSeconds: rule.window_seconds,
});

/** A project's readings: the report signals of its rules' scopes, and the score means of its score rules. */
interface ProjectReadings {
  signals: Map<string, SignalReadings>;
  scores: Map<string, SignalReading>;
}

/** A score rule's reading, by its scope and score name. */
const scoreKeyOf = (rule: AlertRuleRow) => JSON.stringify([scopeKey(scopeOf(rule)), rule.signal]);

function outcomeOf(rule: AlertRuleRow, readings: ProjectReadings | Error): Reading {
  if (readings instanceof Error)
    return { outcome: 'ERROR', value: null, sampleCount: null, error: errorMessage(readings) };
  const read = isScoreSignal(rule.signal)
    ? readings.scores.get(scoreKeyOf(rule))
    : readings.signals.get(scopeKey(scopeOf(rule)))?.[rule.signal as AggregateRuleSignal];
  const reading = read ?? { value: 0, sampleCount: 0 };
  const value = reading.sampleCount === 0 ? 0 : reading.value;
  if (reading.sampleCount < rule.min_requests)
    return { outcome: 'NO_DATA', value, sampleCount: reading.sampleCount, error: null };
  const outcome = compare(value, rule.comparator, rule.threshold) ? 'BREACH' : 'OK';
  return { outcome, value, sampleCount: reading.sampleCount, error: null };
}

interface RuleUpdate {
  id: string;
  evaluation: EvaluationState;
  episodeEventId: string | null;
  evaluatedAt: Date;
  lastError: string | null;
  cooldown: CooldownState;
}

export function alertEvaluator({ pg, signals, readScoreMean, log, concurrency = 4 }: EvaluatorDependencies) {
  /** A project's score rules' readings, one per distinct scope and score name. */
  async function readScores(projectId: string, rules: AlertRuleRow[], at: Date): Promise<Map<string, SignalReading>> {
    const distinct = new Map(rules.map((rule) => [scoreKeyOf(rule), rule]));
    const readings = new Map<string, SignalReading>();
    for (const [key, rule] of distinct) {
      const name = scoreNameOf(rule.signal as `score_mean:${string}`);
      readings.set(key, await readScoreMean(projectId, { ...scopeOf(rule), name }, at));
    }
    return readings;
  }

  /** Reads each project's signals once, for all the distinct scopes of its rules (and their score means). */
  async function readProjects(rules: AlertRuleRow[], at: Date): Promise<Map<string, ProjectReadings | Error>> {
    const rulesByProject = new Map<string, AlertRuleRow[]>();
    for (const rule of rules)
      rulesByProject.set(rule.project_id, [...(rulesByProject.get(rule.project_id) ?? []), rule]);
    const projects = [...rulesByProject.entries()];
    const results = await mapLimited(projects, concurrency, async ([projectId, projectRules]) => {
      const scoreRules = projectRules.filter((rule) => isScoreSignal(rule.signal));
      const scopes = new Map(
        projectRules
          .filter((rule) => !isScoreSignal(rule.signal))
          .map((rule) => [scopeKey(scopeOf(rule)), scopeOf(rule)]),
      );
      try {
        return {
          signals: scopes.size === 0 ? new Map() : await signals.readSignals(projectId, [...scopes.values()], at),
          scores: await readScores(projectId, scoreRules, at),
        };
      } catch (error) {
        log.warn({ err: error, projectId }, 'alert signals could not be read; rules of this project keep their state');
        return error instanceof Error ? error : new Error(String(error));
      }
    });
    return new Map(projects.map(([projectId], index) => [projectId, results[index]]));
  }

  /** Applies one rule's outcome: the transition, its event and notification; returns what to store. */
  async function applyOutcome(
    tx: Sql,
    rule: AlertRuleRow,
    reading: Reading,
    at: Date,
  ): Promise<{ update: RuleUpdate; events: number }> {
    const current: EvaluationState = {
      state: rule.state,
      activeAt: rule.active_at,
      keepFiringSince: rule.keep_firing_since,
    };
    const step = transition(current, reading.outcome, at, {
      forSeconds: rule.for_seconds,
      keepFiringForSeconds: rule.keep_firing_for_seconds,
    });
    let episodeEventId = rule.episode_event_id;
    let cooldown: CooldownState = { lastNotifiedAt: rule.last_notified_at, deferredEventId: rule.deferred_event_id };
    const fields = {
      stateFrom: rule.state,
      value: reading.value,
      sampleCount: reading.sampleCount,
      windowStart: new Date(at.getTime() - rule.window_seconds * 1000),
      windowEnd: at,
    };
    if (step.event === 'firing') {
      ({ eventId: episodeEventId, cooldown } = await recordFiring(
        tx,
        rule,
        { ...fields, reason: 'threshold_crossed' },
        at,
      ));
    } else if (step.event === 'resolved') {
      const reason: EventReason = reading.outcome === 'NO_DATA' ? 'no_data' : 'recovered';
      cooldown = await recordResolution(tx, rule, { ...fields, reason }, at);
      episodeEventId = null;
    }
    return {
      update: {
        id: rule.id,
        evaluation: step.next,
        episodeEventId,
        evaluatedAt: at,
        // An ERROR keeps everything but says why; a successful evaluation clears it.
        lastError: step.recordError ? reading.error : null,
        cooldown,
      },
      events: step.event ? 1 : 0,
    };
  }

  async function storeUpdates(tx: Sql, updates: RuleUpdate[]): Promise<void> {
    if (updates.length === 0) return;
    await tx.query(q.UPDATE_EVALUATED_RULES, [
      updates.map((u) => u.id),
      updates.map((u) => u.evaluation.state),
      updates.map((u) => u.evaluation.activeAt),
      updates.map((u) => u.evaluation.keepFiringSince),
      updates.map((u) => u.episodeEventId),
      updates.map((u) => u.evaluatedAt),
      updates.map((u) => u.lastError),
      updates.map((u) => u.cooldown.lastNotifiedAt),
      updates.map((u) => u.cooldown.deferredEventId),
    ]);
  }

  /**
   * One round at time `at`, in two phases. First the rules and their signals are read with no transaction open,
   * so the ClickHouse time of a round never holds Postgres (on PGlite, one connection, it would stall every
   * request). Then, under the evaluator's advisory lock and with the rules locked, each outcome is applied in one
   * short transaction; a rule edited, created or evaluated in between is left to the next round, because its
   * reading may not match its definition any more. `projectIds` restricts the round to those projects (tests).
   */
  async function evaluateRound(at: Date, options: { projectIds?: readonly string[] } = {}): Promise<RoundResult> {
    const notEvaluatedSince = (rule: AlertRuleRow) =>
      !rule.last_evaluated_at || rule.last_evaluated_at.getTime() < at.getTime();
    const read = (await pg.query<AlertRuleRow>(q.SELECT_AGGREGATE_RULES, [options.projectIds ?? null])).filter(
      notEvaluatedSince,
    );
    const readings = await readProjects(read, at);
    const versionRead = new Map(read.map((rule) => [rule.id, rule.updated_at.getTime()]));
    return pg.transaction(async (tx) => {
      const [lock] = await tx.query<{ acquired: boolean }>(q.TRY_EVALUATOR_LOCK, [q.EVALUATOR_LOCK_KEY]);
      if (!lock?.acquired) return { skipped: true, rules: 0, projects: 0, errors: 0, events: 0 };
      const rules = (await tx.query<AlertRuleRow>(q.LOCK_AGGREGATE_RULES, [options.projectIds ?? null])).filter(
        (rule) => notEvaluatedSince(rule) && versionRead.get(rule.id) === rule.updated_at.getTime(),
      );
      const updates: RuleUpdate[] = [];
      let events = 0;
      let errors = 0;
      for (const rule of rules) {
        const reading = outcomeOf(rule, readings.get(rule.project_id)!);
        if (reading.outcome === 'ERROR') errors += 1;
        const applied = await applyOutcome(tx, rule, reading, at);
        updates.push(applied.update);
        events += applied.events;
      }
      await storeUpdates(tx, updates);
      return { skipped: false, rules: rules.length, projects: readings.size, errors, events };
    });
  }

  return { evaluateRound };
}

export type AlertEvaluator = ReturnType<typeof alertEvaluator>;

/**
 * Evaluates a round now and then every `intervalSeconds` with the given clock; returns the stop function. With
 * `leases`, a round runs only on the instance holding the evaluation's lease, so a deployment reads the signals once
 * per interval (the advisory lock of a round still keeps two rounds from applying outcomes at once).
 */
export function startAlertEvaluator(options: {
  evaluator: Pick<AlertEvaluator, 'evaluateRound'>;
  clock: Clock;
  log: Logger;
  intervalSeconds: number;
  leases?: JobLeases;
  /** Only these projects' rules (tests, which share one database). */
  projectIds?: readonly string[];
}): () => Promise<void> {
  const round = async () => {
    const started = Date.now();
    const result = await options.evaluator.evaluateRound(options.clock.now(), { projectIds: options.projectIds });
    if (!result.skipped) options.log.debug({ ...result, ms: Date.now() - started }, 'alert round evaluated');
  };
  const intervalMs = options.intervalSeconds * 1000;
  const work = options.leases ? onceAcrossInstances(options.leases, 'alert-evaluation', intervalMs, round) : round;
  return runEvery(intervalMs, work, (error) =>
    options.log.error({ err: error }, 'alert round failed; retrying next interval'),
  );
}
