// per_run rules: each finished run (and each run with a newly detected loop) is checked against its project's enabled
// per_run rules; a breaching run is a `triggered` event, notified unless the rule's cooldown holds it back.
import type { Logger } from 'pino';
import type { Clock } from '../clock';
import type { PostgresStore, Sql } from '../db/postgres';
import type { IngestEvents } from '../ingest/service';
import type { Run } from '../runs/model';
import { deliver, insertEvent, type EventReason } from './episodes';
import { compare, type PerRunSignal } from './allowed-values';
import * as q from './queries';
import type { AlertRuleRow } from './rows';
import { planTriggered } from './state-machine';

type Trigger = 'finished' | 'loop';

interface PendingRun {
  run: Run;
  trigger: Trigger;
  /** When ingest reported it; the event's time and the cooldown's reference. */
  at: Date;
}

/** The run's value of a per_run signal; null when the run does not have it yet (duration while running). */
export function perRunValue(signal: PerRunSignal, run: Run): number | null {
  switch (signal) {
    case 'run_cost_usd':
      return run.total_cost_usd;
    case 'run_tokens':
      return run.total_tokens;
    case 'run_duration_ms':
      return run.duration_ms;
    case 'run_steps':
      return run.total_steps;
    case 'loop_detected':
      return run.loop_detected ? 1 : 0;
  }
}

/**
 * Whether a rule applies to a run at this trigger. A loop is checked the moment it is detected; at finish every
 * per_run rule is checked, loop_detected ones included (a run recorded whole by a batch has no earlier loop report),
 * and the (rule, run) pairs already recorded are skipped, so a loop is never reported twice.
 */
const appliesTo = (rule: AlertRuleRow, pending: PendingRun): boolean =>
  (rule.agent_name === null || rule.agent_name === pending.run.agent_name) &&
  (rule.user_id === null || rule.user_id === pending.run.user_id) &&
  (pending.trigger === 'finished' || rule.signal === 'loop_detected');

/** The run's value when it breaches the rule at this trigger; null when it does not. */
function breachingValue(rule: AlertRuleRow, pending: PendingRun): number | null {
  if (!appliesTo(rule, pending)) return null;
  const value = perRunValue(rule.signal as PerRunSignal, pending.run);
  return value !== null && compare(value, rule.comparator, Number(rule.threshold)) ? value : null;
}

interface Breach {
  rule: AlertRuleRow;
  pending: PendingRun;
}

function findBreaches(rules: AlertRuleRow[], runs: PendingRun[]): Breach[] {
  return runs.flatMap((pending) =>
    rules.filter((rule) => breachingValue(rule, pending) !== null).map((rule) => ({ rule, pending })),
  );
}

// How long a project's per_run rules are taken as read. Rule writes on this instance forget them at once; another
// instance's take up to this long to apply here. Breaches are recorded against the rules as they are then (locked).
const RULES_CACHE_MS = 5000;

export function perRunAlerts({ pg, clock, log }: { pg: PostgresStore; clock: Clock; log: Logger }) {
  const queue = new Map<string, PendingRun[]>();
  let draining: Promise<void> | null = null;
  // Every finish asks for its project's rules; at thousands of finishes a second, one query each was a fifth of
  // the event loop (the embedded Postgres runs on it).
  const rulesCache = new Map<string, { rules: AlertRuleRow[]; expiresAt: number }>();

  async function perRunRules(projectId: string): Promise<AlertRuleRow[]> {
    const cached = rulesCache.get(projectId);
    if (cached && cached.expiresAt > Date.now()) return cached.rules;
    const rules = await pg.query<AlertRuleRow>(q.SELECT_PER_RUN_RULES, [projectId]);
    rulesCache.set(projectId, { rules, expiresAt: Date.now() + RULES_CACHE_MS });
    return rules;
  }

  /** Records the breaches of one project in one transaction, each rule locked so that its cooldown is counted once. */
  async function recordBreaches(tx: Sql, breaches: Breach[]): Promise<void> {
    const ruleIds = [...new Set(breaches.map((breach) => breach.rule.id))];
    const locked = new Map(
      (await tx.query<AlertRuleRow>(q.LOCK_PER_RUN_RULES, [ruleIds])).map((rule) => [rule.id, rule]),
    );
    const runIds = [...new Set(breaches.map((breach) => breach.pending.run.id))];
    const recorded = new Set(
      (await tx.query<{ rule_id: string; run_id: string }>(q.SELECT_TRIGGERED_PAIRS, [runIds, ruleIds])).map(
        (row) => `${row.rule_id}/${row.run_id}`,
      ),
    );
    const cooldowns = new Map<string, { lastNotifiedAt: Date | null; suppressedCount: number }>();
    for (const { rule: seen, pending } of breaches) {
      const pair = `${seen.id}/${pending.run.id}`;
      // The rule as it is now (it may have been disabled, deleted or redefined since it was read), and once per run.
      const rule = locked.get(seen.id);
      const value = rule ? breachingValue(rule, pending) : null;
      if (!rule || value === null || recorded.has(pair)) continue;
      recorded.add(pair);
      const cooldown = cooldowns.get(rule.id) ?? {
        lastNotifiedAt: rule.last_notified_at,
        suppressedCount: rule.suppressed_count,
      };
      const plan = planTriggered(cooldown, rule.cooldown_seconds, pending.at);
      const reason: EventReason = pending.trigger === 'loop' ? 'loop_detected' : 'run_finished';
      const eventId = await insertEvent(
        tx,
        rule,
        {
          kind: 'triggered',
          stateFrom: 'inactive',
          stateTo: 'inactive',
          reason,
          value,
          sampleCount: 1,
          windowStart: new Date(pending.run.timestamp),
          windowEnd: pending.run.finished_at ? new Date(pending.run.finished_at) : null,
          runId: pending.run.id,
          suppressedCount: plan.eventSuppressedCount,
        },
        pending.at,
      );
      await deliver(tx, rule, eventId, plan.delivery);
      cooldowns.set(rule.id, plan.next);
    }
    for (const [ruleId, cooldown] of cooldowns)
      await tx.query(q.UPDATE_PER_RUN_COOLDOWN, [ruleId, cooldown.lastNotifiedAt, cooldown.suppressedCount]);
  }

  async function checkProject(projectId: string, runs: PendingRun[]): Promise<void> {
    const rules = await perRunRules(projectId);
    if (rules.length === 0) return;
    const breaches = findBreaches(rules, runs);
    if (breaches.length > 0) await pg.transaction((tx) => recordBreaches(tx, breaches));
  }

  /** Takes everything queued, project by project, until the queue is empty. */
  async function drain(): Promise<void> {
    while (queue.size > 0) {
      const batch = [...queue.entries()];
      queue.clear();
      for (const [projectId, runs] of batch) {
        try {
          await checkProject(projectId, runs);
        } catch (error) {
          log.error(
            { err: error, projectId, runs: runs.length },
            'per_run alert check failed; these runs were not checked',
          );
        }
      }
    }
  }

  function enqueue(run: Run, trigger: Trigger): void {
    const runs = queue.get(run.project_id) ?? [];
    runs.push({ run, trigger, at: clock.now() });
    queue.set(run.project_id, runs);
    kick();
  }

  /** Checked after ingest has answered: the hook only queues; a batch of runs shares one rules query. */
  function kick(): void {
    if (draining || queue.size === 0) return;
    draining = new Promise<void>((resolve) => setImmediate(resolve)).then(drain).finally(() => {
      draining = null;
      kick();
    });
  }

  const events: IngestEvents = {
    runFinished: (run) => enqueue(run, 'finished'),
    loopDetected: (run) => enqueue(run, 'loop'),
  };

  return {
    events,
    /** A project's rules changed on this instance: its per_run checks read them anew. */
    forgetRules: (projectId: string) => void rulesCache.delete(projectId),
    /** Resolves when every run reported so far has been checked (for tests and shutdown). */
    async idle(): Promise<void> {
      while (draining) await draining;
    },
  };
}
