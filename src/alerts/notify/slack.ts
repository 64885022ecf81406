// The Slack channel: an incoming-webhook message (`text` + Block Kit `blocks`) for an alert event, and per-URL pacing.
import type { Comparator } from '../allowed-values';
import type { SlackConfig } from '../channels';
import type { AlertEventRow, AlertRuleRow } from '../rows';
import { runsLabel, scopeLabel } from '../scope-label';
import type { OutgoingRequest } from './webhook';

const COMPARATOR_SYMBOLS: Record<Comparator, string> = { gt: '>', gte: '≥', lt: '<', lte: '≤' };
const RATE_SIGNALS = new Set(['completion_rate', 'failure_rate', 'loop_rate']);
const HEADLINES = { firing: 'Firing', resolved: 'Resolved', triggered: 'Triggered' } as const;
const SEVERITY_EMOJI = {
  critical: ':red_circle:',
  warning: ':large_orange_circle:',
  info: ':large_blue_circle:',
} as const;

/** A signal's value as a person reads it: rates in percent, money in dollars, durations and counts with units. */
export function formatSignalValue(signal: string, value: number): string {
  if (RATE_SIGNALS.has(signal)) return `${(value * 100).toFixed(1).replace(/\.0$/, '')}%`;
  if (signal.endsWith('cost_usd'))
    return `$${value < 1 ? value.toPrecision(3).replace(/0+$/, '').replace(/\.$/, '') : value.toFixed(2)}`;
  if (signal.endsWith('_ms')) return `${Math.round(value).toLocaleString('en-US')} ms`;
  if (signal === 'loop_detected') return value >= 1 ? 'loop detected' : 'no loop';
  return value.toLocaleString('en-US', { maximumFractionDigits: 2 });
}

/** The event's scope: the preview's label for an aggregate rule; a per_run rule names the run instead of a window. */
export function eventScopeLabel(rule: AlertRuleRow, event: AlertEventRow): string {
  if (rule.class !== 'per_run') return scopeLabel(rule.agent_name, rule.window_seconds, rule.user_id);
  const runs = runsLabel(rule.agent_name, rule.user_id);
  return event.run_id ? `${runs} · run ${event.run_id}` : runs;
}

/**
 * Where to look, as an absolute URL under PUBLIC_URL (the run, or the summary report over the event's window);
 * null without PUBLIC_URL, since Slack cannot follow a relative link.
 */
export function eventLink(rule: AlertRuleRow, event: AlertEventRow, publicUrl: string | undefined): string | null {
  if (!publicUrl) return null;
  const base = publicUrl.replace(/\/+$/, '');
  const project = `${base}/projects/${rule.project_id}/agent`;
  if (event.run_id) return `${project}/runs/${event.run_id}`;
  if (!event.window_start || !event.window_end) return null;
  const query = new URLSearchParams({
    from: new Date(event.window_start).toISOString(),
    to: new Date(event.window_end).toISOString(),
  });
  if (rule.agent_name !== null) query.set('agent_name', rule.agent_name);
  if (rule.user_id !== null) query.set('user_id', rule.user_id);
  return `${project}/summary?${query.toString()}`;
}

// Slack mrkdwn treats &, < and > as markup.
const escapeMarkdown = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

export interface SlackMessage {
  text: string;
  blocks: unknown[];
}

export function buildSlackMessage(
  rule: AlertRuleRow,
  event: AlertEventRow,
  publicUrl: string | undefined,
): SlackMessage {
  const headline = `${HEADLINES[event.kind]}: ${rule.name}`;
  // loop_detected's threshold is the number 1, not "loop detected".
  const threshold =
    rule.signal === 'loop_detected' ? String(event.threshold) : formatSignalValue(rule.signal, Number(event.threshold));
  const comparison = `${COMPARATOR_SYMBOLS[event.comparator]} ${threshold}`;
  const value = event.value === null ? 'no value' : formatSignalValue(rule.signal, Number(event.value));
  const scope = eventScopeLabel(rule, event);
  const link = eventLink(rule, event, publicUrl);
  const suppressed = Number(event.suppressed_count ?? 0);

  // Escaped as well: Slack reads `text` as mrkdwn, where a rule or agent name like `<!channel>` would notify everyone.
  const text = escapeMarkdown(
    `[${rule.severity.toUpperCase()}] ${headline} — ${rule.signal} ${value} (threshold ${comparison}), ${scope}`,
  );
  const fields = [
    `*Severity*\n${SEVERITY_EMOJI[rule.severity]} ${rule.severity}`,
    `*Signal*\n\`${rule.signal}\``,
    `*Value*\n${escapeMarkdown(value)}${event.sample_count !== null ? ` (${event.sample_count} runs)` : ''}`,
    `*Threshold*\n${escapeMarkdown(comparison)}`,
    `*Scope*\n${escapeMarkdown(scope)}`,
  ];
  if (event.reason) fields.push(`*Reason*\n${escapeMarkdown(event.reason)}`);
  const context = [`Event \`${event.id}\` · ${new Date(event.created_at).toISOString()}`];
  if (suppressed > 0)
    context.push(`${suppressed} earlier notification${suppressed === 1 ? '' : 's'} held back by the cooldown`);

  const blocks: unknown[] = [
    { type: 'header', text: { type: 'plain_text', text: headline.slice(0, 150), emoji: true } },
    { type: 'section', fields: fields.map((field) => ({ type: 'mrkdwn', text: field })) },
  ];
  if (link)
    blocks.push({
      type: 'section',
      text: { type: 'mrkdwn', text: `<${link}|${event.run_id ? 'Open the run' : 'Open the window'}>` },
    });
  blocks.push({ type: 'context', elements: context.map((line) => ({ type: 'mrkdwn', text: line })) });
  return { text, blocks };
}

export function buildSlackRequest(
  rule: AlertRuleRow,
  event: AlertEventRow,
  publicUrl: string | undefined,
): OutgoingRequest {
  const config = rule.channel_config as SlackConfig;
  return { url: config.webhook_url, body: JSON.stringify(buildSlackMessage(rule, event, publicUrl)), headers: {} };
}

/** Slack accepts about one message per second per webhook; the gap this process keeps between two to one URL. */
export const SLACK_MIN_GAP_MS = 1000;

/**
 * In-process pacing per Slack URL: `reserve` answers null when a message may go now (and books the slot), or the
 * time it may go. Several instances each pace their own sends; Slack's 429 + Retry-After covers the rest.
 */
export class SlackPacer {
  private readonly lastSentAt = new Map<string, number>();

  reserve(url: string, now: Date): Date | null {
    const last = this.lastSentAt.get(url);
    if (last !== undefined && now.getTime() < last + SLACK_MIN_GAP_MS) return new Date(last + SLACK_MIN_GAP_MS);
    this.forgetOld(now.getTime());
    this.lastSentAt.set(url, now.getTime());
    return null;
  }

  private forgetOld(nowMs: number): void {
    if (this.lastSentAt.size < 1000) return;
    for (const [url, at] of this.lastSentAt) if (at + SLACK_MIN_GAP_MS <= nowMs) this.lastSentAt.delete(url);
  }
}
