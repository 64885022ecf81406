// A rule's definition: the fields a client declares (a create, or a PATCH over the stored rule) resolved into every
// field of the rule, with the defaults of its signal and class, and checked as a whole (class against signal, bounds
// by class, thresholds of rates, the channel's configuration).
import { invalidFields, validationError, type ErrorDetail } from '../errors';
import {
  isAggregateSignal,
  isPerRunSignal,
  isScoreSignal,
  type Channel,
  type Comparator,
  type RuleClass,
  type RuleSignal,
  type Severity,
} from './allowed-values';
import { generateWebhookSecret, maskSecret, type ChannelConfig } from './channels';
import { channelConfigBodies, LIMITS, type CreateRuleInput, type PatchRuleInput } from './schemas';

/** A complete rule definition: every field of a rule a client may set, defaults applied, validated as a whole. */
export interface RuleDefinition {
  name: string;
  class: RuleClass;
  signal: RuleSignal;
  comparator: Comparator;
  threshold: number;
  agent_name: string | null;
  /** One user's runs (contract §10); null for every user's. */
  user_id: string | null;
  window_seconds: number;
  for_seconds: number;
  keep_firing_for_seconds: number;
  cooldown_seconds: number;
  min_requests: number;
  severity: Severity;
  channel: Channel;
  channel_config: ChannelConfig;
  enabled: boolean;
}

export interface ResolvedRule {
  definition: RuleDefinition;
  /** The webhook secret was generated now; the response that carries it shows it unmasked, this once. */
  secretGenerated: boolean;
}

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

/**
 * `lt` where a low value is the problem (too few runs, too few completions, a low score); `gte` 1 for loop_detected;
 * else `gt`.
 */
export function defaultComparator(signal: RuleSignal): Comparator {
  if (signal === 'total_runs' || signal === 'completion_rate' || isScoreSignal(signal)) return 'lt';
  if (signal === 'loop_detected') return 'gte';
  return 'gt';
}

/**
 * Threshold of a signal: the sent one (≥ 0, as the body's schema takes it), else the signal's default (score signals
 * have none: scores have no common scale); rates ≤ 1.
 */
export function checkThreshold(signal: RuleSignal, threshold: number | undefined, details: ErrorDetail[]): number {
  const value = threshold ?? (isScoreSignal(signal) ? undefined : DEFAULT_THRESHOLDS[signal]);
  if (value === undefined) {
    details.push({ path: 'threshold', message: `is required for signal ${signal}` });
    return 0;
  }
  if (RATE_SIGNALS.has(signal) && value > 1)
    details.push({ path: 'threshold', message: `must be in [0, 1] for signal ${signal}` });
  return value;
}

/** A client that sends back the masked value it read means "keep the stored one". */
function unmaskKept(channel: Channel, raw: Record<string, unknown>, kept: Record<string, string> | undefined) {
  const input = { ...raw };
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
  return input;
}

function checkChannelConfig(
  channel: Channel,
  raw: Record<string, unknown>,
  previous: { channel: Channel; config: ChannelConfig } | undefined,
  details: ErrorDetail[],
): { config: ChannelConfig; secretGenerated: boolean } | undefined {
  const kept = previous?.channel === channel ? (previous.config as unknown as Record<string, string>) : undefined;
  const parsed = channelConfigBodies[channel].safeParse(unmaskKept(channel, raw, kept));
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
    user_id: input.user_id ?? null,
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
export function resolveRuleUpdate(stored: RuleDefinition, input: PatchRuleInput): ResolvedRule {
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
    user_id: input.user_id !== undefined ? input.user_id : stored.user_id,
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
