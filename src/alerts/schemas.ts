// Request schemas of the alert endpoints, and the resolution of a rule payload into a complete, valid definition.
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { invalidFields, validationError, type ErrorDetail } from '../errors';
import { pagingFields, storedText } from '../http/schemas';
import {
  CHANNELS,
  COMPARATORS,
  RULE_CLASSES,
  RULE_SIGNALS,
  SEVERITIES,
  isAggregateSignal,
  isPerRunSignal,
  maskSecret,
  type AlertRuleRow,
  type Channel,
  type RuleDefinition,
  type ChannelConfig,
  type Comparator,
  type RuleClass,
  type RuleSignal,
} from './model';

export const LIMITS = {
  windowSeconds: { min: 60, max: 2_592_000 },
  holdSeconds: { min: 60, max: 86_400 },
  cooldownSeconds: { max: 604_800 },
  minRequests: { max: 2_147_483_647 },
} as const;

export const DEFAULTS = {
  windowSeconds: 300,
  cooldownSeconds: 600,
  minRequests: 10,
} as const;

const RATE_SIGNALS: ReadonlySet<RuleSignal> = new Set([
  'completion_rate',
  'failure_rate',
  'loop_rate',
  'loop_detected',
]);
const DEFAULT_THRESHOLDS: Partial<Record<RuleSignal, number>> = {
  completion_rate: 0.9,
  failure_rate: 0.1,
  loop_rate: 0.05,
  loop_detected: 1,
  total_runs: 1,
};

/** `lt` where a low value is the problem (too few runs, too few completions); `gte` 1 for loop_detected; else `gt`. */
export function defaultComparator(signal: RuleSignal): Comparator {
  if (signal === 'total_runs' || signal === 'completion_rate') return 'lt';
  if (signal === 'loop_detected') return 'gte';
  return 'gt';
}

export const defaultThreshold = (signal: RuleSignal): number | undefined => DEFAULT_THRESHOLDS[signal];

// ---- request bodies --------------------------------------------------------------------------------------

const seconds = (max: number) => z.number().int().min(0).max(max);
const httpUrl = storedText()
  .max(2048)
  .pipe(z.url({ protocol: /^https?$/, message: 'must be an http(s) URL' }));
export const agentName = storedText().min(1).max(200);

const ruleFields = {
  name: storedText().trim().min(1).max(200),
  class: z.enum(RULE_CLASSES),
  signal: z.enum(RULE_SIGNALS),
  comparator: z.enum(COMPARATORS),
  threshold: z
    .number()
    .min(0, 'must be at least 0')
    .describe('at most 1 for completion_rate, failure_rate, loop_rate and loop_detected'),
  agent_name: agentName.nullable(),
  // Which values a rule takes depends on its class (checkClassFields): the bounds of both are described.
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
    window_seconds: z.number().int().min(LIMITS.windowSeconds.min).max(LIMITS.windowSeconds.max).optional(),
    min_requests: ruleFields.min_requests.optional(),
  })
  .meta({ id: 'AlertRuleDraft' });
export type DraftRuleInput = z.infer<typeof draftRuleBody>;

export const eventsQuery = z.strictObject({
  ...pagingFields(50),
});

const webhookConfigIn = z.strictObject({
  url: httpUrl,
  secret: storedText().min(16, 'must be at least 16 characters').max(512).optional(),
  send_resolved: z.boolean().optional(),
});
const slackConfigIn = z.strictObject({ webhook_url: httpUrl, send_resolved: z.boolean().optional() });

// ---- resolution ------------------------------------------------------------------------------------------

export interface ResolvedRule {
  definition: RuleDefinition;
  /** The webhook secret was generated now; the response that carries it shows it unmasked, this once. */
  secretGenerated: boolean;
}

/** `whsec_` + 32 random bytes in base64 (the Standard Webhooks secret format). */
export const generateWebhookSecret = (): string => `whsec_${randomBytes(32).toString('base64')}`;

/** Threshold of a signal: the sent one (≥ 0, as the body's schema takes it), else the signal's default; rates at most 1. */
export function checkThreshold(signal: RuleSignal, threshold: number | undefined, details: ErrorDetail[]): number {
  const value = threshold ?? defaultThreshold(signal);
  if (value === undefined) {
    details.push({ path: 'threshold', message: `is required for signal ${signal}` });
    return 0;
  }
  if (RATE_SIGNALS.has(signal) && value > 1)
    details.push({ path: 'threshold', message: `must be in [0, 1] for signal ${signal}` });
  return value;
}

function checkChannelConfig(
  channel: Channel,
  raw: Record<string, unknown>,
  previous: { channel: Channel; config: ChannelConfig } | undefined,
  details: ErrorDetail[],
): { config: ChannelConfig; secretGenerated: boolean } | undefined {
  // A client that sends back the masked value it read means "keep the stored one".
  const input = { ...raw };
  const kept = previous?.channel === channel ? (previous.config as unknown as Record<string, string>) : undefined;
  if (kept && channel === 'webhook' && typeof input.secret === 'string' && input.secret === maskSecret(kept.secret))
    input.secret = kept.secret;
  if (
    kept &&
    channel === 'slack' &&
    typeof input.webhook_url === 'string' &&
    input.webhook_url === maskSecret(kept.webhook_url)
  ) {
    input.webhook_url = kept.webhook_url;
  }
  const parsed = (channel === 'webhook' ? webhookConfigIn : slackConfigIn).safeParse(input);
  if (!parsed.success) {
    details.push(...validationError('validation_failed', parsed.error.issues, ['channel_config']).details);
    return undefined;
  }
  const sendResolved = parsed.data.send_resolved ?? true;
  if ('url' in parsed.data) {
    // A webhook secret not sent is kept when the rule already had one (it is write-only), else generated.
    const secret = parsed.data.secret ?? kept?.secret;
    return {
      config: { url: parsed.data.url, secret: secret ?? generateWebhookSecret(), send_resolved: sendResolved },
      secretGenerated: !secret,
    };
  }
  return { config: { webhook_url: parsed.data.webhook_url, send_resolved: sendResolved }, secretGenerated: false };
}

function checkClassFields(definition: RuleDefinition, details: ErrorDetail[]): void {
  const { signal } = definition;
  if (definition.class === 'aggregate' && !isAggregateSignal(signal)) {
    details.push({ path: 'signal', message: `${signal} is a per_run signal; it does not belong to class aggregate` });
  }
  if (definition.class === 'per_run' && !isPerRunSignal(signal)) {
    details.push({ path: 'signal', message: `${signal} is an aggregate signal; it does not belong to class per_run` });
  }
  if (definition.class === 'per_run') {
    for (const field of ['window_seconds', 'for_seconds', 'keep_firing_for_seconds', 'min_requests'] as const) {
      if (definition[field] !== 0) details.push({ path: field, message: 'must be 0 for a per_run rule' });
    }
    return;
  }
  const { windowSeconds, holdSeconds } = LIMITS;
  if (definition.window_seconds < windowSeconds.min || definition.window_seconds > windowSeconds.max) {
    details.push({
      path: 'window_seconds',
      message: `must be between ${windowSeconds.min} and ${windowSeconds.max} for an aggregate rule`,
    });
  }
  for (const field of ['for_seconds', 'keep_firing_for_seconds'] as const) {
    const value = definition[field];
    if (value !== 0 && (value < holdSeconds.min || value > holdSeconds.max)) {
      details.push({ path: field, message: `must be 0 or between ${holdSeconds.min} and ${holdSeconds.max}` });
    }
  }
}

const classDefaults = (ruleClass: RuleClass) =>
  ruleClass === 'aggregate'
    ? {
        window_seconds: DEFAULTS.windowSeconds,
        for_seconds: 0,
        keep_firing_for_seconds: 0,
        min_requests: DEFAULTS.minRequests,
      }
    : { window_seconds: 0, for_seconds: 0, keep_firing_for_seconds: 0, min_requests: 0 };

/** A create payload → a complete definition, or 400 with every problem found. */
export function resolveNewRule(input: CreateRuleInput): ResolvedRule {
  const details: ErrorDetail[] = [];
  const byClass = classDefaults(input.class);
  const channel = checkChannelConfig(input.channel, input.channel_config, undefined, details);
  const definition: RuleDefinition = {
    name: input.name,
    class: input.class,
    signal: input.signal,
    comparator: input.comparator ?? defaultComparator(input.signal),
    threshold: checkThreshold(input.signal, input.threshold, details),
    agent_name: input.agent_name ?? null,
    window_seconds: input.window_seconds ?? byClass.window_seconds,
    for_seconds: input.for_seconds ?? byClass.for_seconds,
    keep_firing_for_seconds: input.keep_firing_for_seconds ?? byClass.keep_firing_for_seconds,
    cooldown_seconds: input.cooldown_seconds ?? DEFAULTS.cooldownSeconds,
    min_requests: input.min_requests ?? byClass.min_requests,
    severity: input.severity,
    channel: input.channel,
    channel_config: channel?.config ?? { url: '', secret: '', send_resolved: true },
    enabled: input.enabled ?? true,
  };
  checkClassFields(definition, details);
  if (details.length > 0) throw invalidFields(details);
  return { definition, secretGenerated: channel?.secretGenerated ?? false };
}

/**
 * A PATCH payload over a stored rule → the complete new definition. Fields sent replace the stored ones; fields not
 * sent keep their value, except those whose meaning depends on what changed: a new signal brings its default
 * comparator and threshold, a new class its default window, for, keep_firing_for and min_requests.
 */
export function resolveRuleUpdate(stored: AlertRuleRow, input: PatchRuleInput): ResolvedRule {
  const details: ErrorDetail[] = [];
  const ruleClass = input.class ?? stored.class;
  const signal = input.signal ?? stored.signal;
  const signalChanged = signal !== stored.signal;
  const byClass = ruleClass !== stored.class ? classDefaults(ruleClass) : stored;
  const channel = input.channel ?? stored.channel;

  let channelConfig: ChannelConfig = stored.channel_config;
  let secretGenerated = false;
  if (input.channel_config !== undefined) {
    const checked = checkChannelConfig(
      channel,
      input.channel_config,
      { channel: stored.channel, config: stored.channel_config },
      details,
    );
    if (checked) ({ config: channelConfig, secretGenerated } = checked);
  } else if (channel !== stored.channel) {
    details.push({ path: 'channel_config', message: `is required when channel changes to ${channel}` });
  }

  const definition: RuleDefinition = {
    name: input.name ?? stored.name,
    class: ruleClass,
    signal,
    comparator: input.comparator ?? (signalChanged ? defaultComparator(signal) : stored.comparator),
    threshold:
      signalChanged || input.threshold !== undefined
        ? checkThreshold(signal, input.threshold, details)
        : Number(stored.threshold),
    agent_name: input.agent_name !== undefined ? input.agent_name : stored.agent_name,
    window_seconds: input.window_seconds ?? byClass.window_seconds,
    for_seconds: input.for_seconds ?? byClass.for_seconds,
    keep_firing_for_seconds: input.keep_firing_for_seconds ?? byClass.keep_firing_for_seconds,
    cooldown_seconds: input.cooldown_seconds ?? stored.cooldown_seconds,
    min_requests: input.min_requests ?? byClass.min_requests,
    severity: input.severity ?? stored.severity,
    channel,
    channel_config: channelConfig,
    enabled: input.enabled ?? stored.enabled,
  };
  checkClassFields(definition, details);
  if (details.length > 0) throw invalidFields(details);
  return { definition, secretGenerated };
}

/** The URLs of a channel configuration that receive notifications (for the private-address check). */
export function notificationUrls(config: ChannelConfig): { path: string; url: string }[] {
  return 'url' in config
    ? [{ path: 'channel_config.url', url: config.url }]
    : [{ path: 'channel_config.webhook_url', url: config.webhook_url }];
}
