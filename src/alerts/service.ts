// Alert rules of a project: create, read, change (resolving an open episode when the rule's meaning changes),
// delete, history, and the preview of a draft rule against the live data.
import type { Clock } from '../clock';
import type { PostgresStore, Sql } from '../db/postgres';
import { AppError, invalidFields, notFound } from '../errors';
import type { AggregateSignal, SignalReading, SignalReadings, SignalScope } from '../reports/signals';
import {
  compare,
  isPerRunSignal,
  isScoreSignal,
  scoreNameOf,
  type AggregateRuleSignal,
  type ScoreSignal,
} from './allowed-values';
import { notificationUrls } from './channels';
import {
  DEFAULTS,
  checkThreshold,
  defaultComparator,
  resolveNewRule,
  resolveRuleUpdate,
  type RuleDefinition,
} from './definition';
import { recordResolution } from './episodes';
import { newRuleId } from './ids';
import * as q from './queries';
import {
  toAlertEvent,
  toAlertRule,
  toAlertRuleWithState,
  type AlertEventRow,
  type AlertRuleRow,
  type DeliveryRow,
} from './rows';
import type { AlertRule, CreateRuleInput, DraftRuleInput, PatchRuleInput } from './schemas';
import { scopeLabel } from './scope-label';
import { resetOnRuleChange } from './state-machine';
import { assertAllowedUrl, UnsafeUrlError, type UrlPolicy } from './url-safety';

/** Reads signals for one project; the reports capability's reader (one query per call). */
export interface SignalSource {
  readSignals(projectId: string, scopes: readonly SignalScope[], at: Date): Promise<Map<string, SignalReadings>>;
}

/** Reads one signal of one scope over [at − window, at) for a project: the preview's reading. */
export type ReadSignal = (
  projectId: string,
  scope: SignalScope,
  signal: AggregateSignal,
  at: Date,
) => Promise<SignalReading>;

/** Reads score_mean of a score name over one scope's [at − window, at) (the scores capability). */
export type ReadScoreMean = (
  projectId: string,
  scope: SignalScope & { name: string },
  at: Date,
) => Promise<SignalReading>;

export interface AlertRuleServiceDependencies {
  pg: PostgresStore;
  clock: Clock;
  readSignal: ReadSignal;
  readScoreMean: ReadScoreMean;
  /** Where notifications may go (WEBHOOK_DENY_PRIVATE, WEBHOOK_ALLOW_HOSTS): other URLs are refused at once. */
  urlPolicy: UrlPolicy;
  /** Told after a project's rules were written, so that what caches them reads them anew. */
  rulesChanged: (projectId: string) => void;
}

/** The fields whose change makes an open episode meaningless: it resolves with reason rule_updated. */
const MEANING_FIELDS = [
  'class',
  'signal',
  'threshold',
  'comparator',
  'window_seconds',
  'agent_name',
  'user_id',
] as const;

const definitionParams = (definition: RuleDefinition) => [
  definition.name,
  definition.class,
  definition.signal,
  definition.comparator,
  definition.threshold,
  definition.agent_name,
  definition.window_seconds,
  definition.for_seconds,
  definition.keep_firing_for_seconds,
  definition.cooldown_seconds,
  definition.min_requests,
  definition.severity,
  definition.channel,
  JSON.stringify(definition.channel_config),
  definition.enabled,
  definition.user_id,
];

interface EventWithDeliveryRow extends AlertEventRow {
  delivery_status: DeliveryRow['status'] | null;
  delivery_attempts: number | null;
  delivery_last_status_code: number | null;
  delivery_last_error: string | null;
}

export function alertRuleService({
  pg,
  clock,
  readSignal,
  readScoreMean,
  urlPolicy,
  rulesChanged,
}: AlertRuleServiceDependencies) {
  async function requireProject(sql: Sql, orgId: string, projectId: string): Promise<void> {
    const [row] = await sql.query(q.SELECT_PROJECT_OF_ORG, [orgId, projectId]);
    if (!row) throw notFound('project');
  }

  async function requireRule(
    sql: Sql,
    orgId: string,
    projectId: string,
    ruleId: string,
    lock = false,
  ): Promise<AlertRuleRow> {
    const [row] = await sql.query<AlertRuleRow>(lock ? q.LOCK_RULE : q.SELECT_RULE, [orgId, projectId, ruleId]);
    if (!row) throw notFound('alert rule');
    return row;
  }

  /** Every URL that will receive notifications must be one the policy allows (public, or listed). */
  async function checkUrls(urls: { path: string; url: string }[]): Promise<void> {
    for (const { path, url } of urls) {
      try {
        await assertAllowedUrl(urlPolicy, url, true);
      } catch (error) {
        if (error instanceof UnsafeUrlError) throw invalidFields([{ path, message: error.message }]);
        throw error;
      }
    }
  }

  /** The URLs a PATCH body sends (a masked value sent back is no URL: the stored one, already checked, stays). */
  function sentUrls(body: PatchRuleInput): { path: string; url: string }[] {
    const config = body.channel_config ?? {};
    return (['url', 'webhook_url'] as const)
      .filter((field) => typeof config[field] === 'string' && URL.canParse(config[field] as string))
      .map((field) => ({ path: `channel_config.${field}`, url: config[field] as string }));
  }

  const withSecret = (rule: AlertRule, row: AlertRuleRow, secretGenerated: boolean): AlertRule => {
    if (!secretGenerated || !('secret' in row.channel_config)) return rule;
    // Shown this once: the secret was generated by this request and the caller has no other way to learn it.
    return {
      ...rule,
      channel_config: { ...rule.channel_config, secret: row.channel_config.secret } as AlertRule['channel_config'],
    };
  };

  return {
    async create(orgId: string, projectId: string, body: CreateRuleInput): Promise<AlertRule> {
      await requireProject(pg, orgId, projectId);
      const { definition, secretGenerated } = resolveNewRule(body);
      await checkUrls(notificationUrls(definition.channel_config));
      const now = clock.now();
      const [row] = await pg.query<AlertRuleRow>(q.INSERT_RULE, [
        newRuleId(),
        projectId,
        ...definitionParams(definition),
        now,
      ]);
      rulesChanged(projectId);
      return withSecret(toAlertRule(row), row, secretGenerated);
    },

    async list(orgId: string, projectId: string) {
      await requireProject(pg, orgId, projectId);
      return (await pg.query<AlertRuleRow>(q.SELECT_RULES, [projectId])).map(toAlertRuleWithState);
    },

    async get(orgId: string, projectId: string, ruleId: string) {
      return toAlertRuleWithState(await requireRule(pg, orgId, projectId, ruleId));
    },

    async update(orgId: string, projectId: string, ruleId: string, body: PatchRuleInput): Promise<AlertRule> {
      // Validate and resolve host names before the transaction, so that no lock waits on DNS.
      resolveRuleUpdate(await requireRule(pg, orgId, projectId, ruleId), body);
      await checkUrls(sentUrls(body));
      const { row, secretGenerated } = await pg.transaction(async (tx) => {
        const stored = await requireRule(tx, orgId, projectId, ruleId, true);
        const { definition, secretGenerated } = resolveRuleUpdate(stored, body);
        const now = clock.now();
        const disabled = stored.enabled && !definition.enabled;
        const redefined = MEANING_FIELDS.some((field) => definition[field] !== stored[field]);
        let evaluation = { state: stored.state, activeAt: stored.active_at, keepFiringSince: stored.keep_firing_since };
        let episodeEventId = stored.episode_event_id;
        let cooldown = { lastNotifiedAt: stored.last_notified_at, deferredEventId: stored.deferred_event_id };
        if (disabled || redefined) {
          const reset = resetOnRuleChange(evaluation);
          if (reset.event === 'resolved') {
            // The event describes the episode that ends (old threshold); its notification goes where the rule now
            // points.
            const notifying = { ...stored, channel: definition.channel, channel_config: definition.channel_config };
            cooldown = await recordResolution(
              tx,
              notifying,
              { stateFrom: stored.state, reason: disabled ? 'rule_disabled' : 'rule_updated' },
              now,
            );
          }
          evaluation = reset.next;
          episodeEventId = null;
        }
        const [row] = await tx.query<AlertRuleRow>(q.UPDATE_RULE, [
          stored.id,
          ...definitionParams(definition),
          now,
          evaluation.state,
          evaluation.activeAt,
          evaluation.keepFiringSince,
          episodeEventId,
          cooldown.lastNotifiedAt,
          cooldown.deferredEventId,
          redefined || disabled,
        ]);
        return { row, secretGenerated };
      });
      rulesChanged(projectId);
      return withSecret(toAlertRule(row), row, secretGenerated);
    },

    async remove(orgId: string, projectId: string, ruleId: string): Promise<void> {
      // Its events and queued notifications go with it (ON DELETE CASCADE): an open episode ends silently.
      const deleted = await pg.query(q.DELETE_RULE, [orgId, projectId, ruleId]);
      if (deleted.length === 0) throw notFound('alert rule');
      rulesChanged(projectId);
    },

    async events(orgId: string, projectId: string, ruleId: string, page: { limit: number; offset: number }) {
      await requireRule(pg, orgId, projectId, ruleId);
      const rows = await pg.query<EventWithDeliveryRow>(q.SELECT_EVENTS, [ruleId, page.limit, page.offset]);
      return rows.map((row) =>
        toAlertEvent(
          row,
          row.delivery_status
            ? {
                status: row.delivery_status,
                attempts: row.delivery_attempts ?? 0,
                last_status_code: row.delivery_last_status_code,
                last_error: row.delivery_last_error,
              }
            : null,
        ),
      );
    },

    /** The draft's signal now, over [now − window, now): the summary report's query. Nothing is saved. */
    async preview(orgId: string, projectId: string, draft: DraftRuleInput) {
      if (isPerRunSignal(draft.signal))
        throw new AppError(400, 'unsupported_signal', 'preview works for aggregate signals only');
      await requireProject(pg, orgId, projectId);
      const signal = draft.signal as AggregateRuleSignal | ScoreSignal;
      const details: { path: string; message: string }[] = [];
      const threshold = checkThreshold(signal, draft.threshold, details);
      if (details.length > 0) throw invalidFields(details);
      const scope: SignalScope = {
        agentName: draft.agent_name ?? null,
        userId: draft.user_id ?? null,
        windowSeconds: draft.window_seconds ?? DEFAULTS.windowSeconds,
      };
      const minRequests = draft.min_requests ?? DEFAULTS.minRequests;
      const reading = isScoreSignal(signal)
        ? await readScoreMean(projectId, { ...scope, name: scoreNameOf(signal) }, clock.now())
        : await readSignal(projectId, scope, signal, clock.now());
      const value = reading.sampleCount === 0 ? 0 : reading.value;
      return {
        value,
        sample_count: reading.sampleCount,
        scope_label: scopeLabel(scope.agentName, scope.windowSeconds, scope.userId),
        would_breach:
          reading.sampleCount >= minRequests &&
          compare(value, draft.comparator ?? defaultComparator(signal), threshold),
      };
    },
  };
}

export type AlertRuleService = ReturnType<typeof alertRuleService>;
