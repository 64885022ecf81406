// The zod schemas of the alert endpoints: request bodies and queries, and the rules, events and previews answered.
import { z } from 'zod';
import { count, pagingFields, storedText, timestampOut, uuid } from '../http/schemas';
import {
  CHANNELS,
  COMPARATORS,
  DELIVERY_STATUSES,
  EVENT_KINDS,
  RULE_CLASSES,
  RULE_SIGNALS,
  RULE_STATES,
  SCORE_SIGNAL_PATTERN,
  SEVERITIES,
  type ScoreSignal,
} from './allowed-values';

export const LIMITS = {
  windowSeconds: { min: 60, max: 2_592_000 },
  holdSeconds: { min: 60, max: 86_400 },
  cooldownSeconds: { max: 604_800 },
  minRequests: { max: 2_147_483_647 },
} as const;

// ---- requests --------------------------------------------------------------------------------------------

const seconds = (max: number) => z.number().int().min(0).max(max);
const httpUrl = storedText()
  .max(2048)
  .pipe(z.url({ protocol: /^https?$/, message: 'must be an http(s) URL' }));
const agentName = storedText().min(1).max(200);
const scoreSignal = z
  .string()
  .regex(SCORE_SIGNAL_PATTERN, 'must be one of the signals, or score_mean:<score name>')
  .transform((signal) => signal as ScoreSignal)
  .describe('the mean of a score over the runs of the window that have it (aggregate)');
const signal = z.union([z.enum(RULE_SIGNALS), scoreSignal]);

const ruleFields = {
  name: storedText().trim().min(1).max(200),
  class: z.enum(RULE_CLASSES),
  signal,
  comparator: z.enum(COMPARATORS),
  threshold: z
    .number()
    .min(0, 'must be at least 0')
    .describe('at most 1 for completion_rate, failure_rate, loop_rate and loop_detected'),
  agent_name: agentName.nullable(),
  user_id: agentName.nullable().describe("one user's runs (contract §10); null: every user's"),
  // Which values a rule takes depends on its class (definition.ts): the bounds of both are described.
  window_seconds: seconds(LIMITS.windowSeconds.max).describe(
    '60 to 2592000 (30 days) for an aggregate rule; 0 for a per_run rule',
  ),
  for_seconds: seconds(LIMITS.holdSeconds.max).describe(
    '0, or 60 to 86400 for an aggregate rule; 0 for a per_run rule',
  ),
  keep_firing_for_seconds: seconds(LIMITS.holdSeconds.max).describe(
    '0, or 60 to 86400 for an aggregate rule; 0 for a per_run rule',
  ),
  cooldown_seconds: seconds(LIMITS.cooldownSeconds.max),
  min_requests: z.number().int().min(0).max(LIMITS.minRequests.max),
  severity: z.enum(SEVERITIES),
  channel: z.enum(CHANNELS),
  channel_config: z
    .record(z.string(), z.unknown())
    .describe('webhook: { url, secret?, send_resolved? } · slack: { webhook_url, send_resolved? }'),
  enabled: z.boolean(),
};

export const createRuleBody = z
  .strictObject({
    name: ruleFields.name,
    class: ruleFields.class,
    signal: ruleFields.signal,
    severity: ruleFields.severity,
    channel: ruleFields.channel,
    channel_config: ruleFields.channel_config,
    comparator: ruleFields.comparator.optional(),
    threshold: ruleFields.threshold.optional(),
    agent_name: ruleFields.agent_name.optional(),
    user_id: ruleFields.user_id.optional(),
    window_seconds: ruleFields.window_seconds.optional(),
    for_seconds: ruleFields.for_seconds.optional(),
    keep_firing_for_seconds: ruleFields.keep_firing_for_seconds.optional(),
    cooldown_seconds: ruleFields.cooldown_seconds.optional(),
    min_requests: ruleFields.min_requests.optional(),
    enabled: ruleFields.enabled.optional(),
  })
  .meta({ id: 'AlertRuleCreate' });
export type CreateRuleInput = z.infer<typeof createRuleBody>;

// PATCH replaces the mutable fields sent: any field of a create, none required.
export const patchRuleBody = createRuleBody.partial().meta({ id: 'AlertRulePatch' });
export type PatchRuleInput = z.infer<typeof patchRuleBody>;

export const draftRuleBody = z
  .strictObject({
    signal: ruleFields.signal,
    comparator: ruleFields.comparator,
    threshold: ruleFields.threshold.optional(),
    agent_name: ruleFields.agent_name.optional(),
    user_id: ruleFields.user_id.optional(),
    window_seconds: z.number().int().min(LIMITS.windowSeconds.min).max(LIMITS.windowSeconds.max).optional(),
    min_requests: ruleFields.min_requests.optional(),
  })
  .meta({ id: 'AlertRuleDraft' });
export type DraftRuleInput = z.infer<typeof draftRuleBody>;

export const eventsQuery = z.strictObject({
  ...pagingFields(50),
});

/** A channel_config as sent: checked against its channel's schema once the channel is known (definition.ts). */
export const channelConfigBodies = {
  webhook: z.strictObject({
    url: httpUrl,
    secret: storedText().min(16, 'must be at least 16 characters').max(512).optional(),
    send_resolved: z.boolean().optional(),
  }),
  slack: z.strictObject({ webhook_url: httpUrl, send_resolved: z.boolean().optional() }),
};

// ---- responses -------------------------------------------------------------------------------------------

const webhookConfigOut = z.object({
  url: z.string(),
  secret: z.string().describe('masked (`whsec_…abcd`), except in the response that created it'),
  send_resolved: z.boolean(),
});
const slackConfigOut = z.object({
  webhook_url: z.string().describe('masked (`https:…abcd`)'),
  send_resolved: z.boolean(),
});

export const alertRuleSchema = z
  .object({
    id: uuid,
    project_id: uuid,
    name: z.string(),
    agent_name: z.string().nullable(),
    user_id: z.string().nullable(),
    signal: z.union([z.enum(RULE_SIGNALS), z.string().regex(SCORE_SIGNAL_PATTERN)]),
    class: z.enum(RULE_CLASSES),
    comparator: z.enum(COMPARATORS),
    threshold: z.number(),
    window_seconds: count,
    for_seconds: count,
    keep_firing_for_seconds: count,
    cooldown_seconds: count,
    min_requests: count,
    severity: z.enum(SEVERITIES),
    channel: z.enum(CHANNELS),
    channel_config: z.union([webhookConfigOut, slackConfigOut]),
    enabled: z.boolean(),
    created_at: timestampOut,
  })
  .meta({ id: 'AlertRule' });
export type AlertRule = z.infer<typeof alertRuleSchema>;

/** A rule as read back (GET one, list): plus its evaluation state and the last evaluation error. */
export const alertRuleWithStateSchema = alertRuleSchema
  .extend({
    state: z.enum(RULE_STATES),
    last_error: z.string().nullable(),
  })
  .meta({ id: 'AlertRuleWithState' });
export type AlertRuleWithState = z.infer<typeof alertRuleWithStateSchema>;

export const notificationSchema = z
  .object({
    status: z.enum(DELIVERY_STATUSES),
    attempts: count,
    last_status_code: z.number().int().nullable(),
    last_error: z
      .string()
      .nullable()
      .describe(
        'Why the last attempt failed (an HTTP status and the start of its answer, a network error, a refusal); ' +
          'null once sent',
      ),
  })
  .meta({ id: 'AlertNotification' });

export const alertEventSchema = z
  .object({
    id: uuid,
    rule_id: uuid,
    kind: z.enum(EVENT_KINDS),
    state_from: z.string(),
    state_to: z.string(),
    value: z.number().nullable(),
    sample_count: count.nullable(),
    threshold: z.number(),
    comparator: z.enum(COMPARATORS),
    window_start: timestampOut.nullable(),
    window_end: timestampOut.nullable(),
    run_id: uuid.nullable(),
    reason: z.string().nullable(),
    severity: z.enum(SEVERITIES),
    /** Notifications of this rule held back by the cooldown before this one (per_run rules); 0 otherwise. */
    suppressed_count: count,
    created_at: timestampOut,
    /** null when the event has no delivery (for example a resolved event of a rule with send_resolved false). */
    notification: notificationSchema.nullable(),
  })
  .meta({ id: 'AlertEvent' });
export type AlertEvent = z.infer<typeof alertEventSchema>;

export const previewResultSchema = z
  .object({
    value: z.number(),
    sample_count: count,
    scope_label: z.string(),
    would_breach: z.boolean(),
  })
  .meta({ id: 'PreviewResult' });
