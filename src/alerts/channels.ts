// Where a rule's notifications go: the webhook and Slack configurations as stored, and as clients see them (masked).
import { randomBytes } from 'node:crypto';
import type { Channel } from './allowed-values';

/** As stored (unmasked; internal use only: signing, posting). */
export interface WebhookConfig {
  url: string;
  secret: string;
  send_resolved: boolean;
}
export interface SlackConfig {
  webhook_url: string;
  send_resolved: boolean;
}
export type ChannelConfig = WebhookConfig | SlackConfig;

/** `whsec_` + 32 random bytes in base64 (the Standard Webhooks secret format). */
export const generateWebhookSecret = (): string => `whsec_${randomBytes(32).toString('base64')}`;

/** Write-only values are shown as their first 6 and last 4 characters: `whsec_…abcd`. */
export function maskSecret(secret: string): string {
  if (secret.length <= 12) return '…';
  return `${secret.slice(0, 6)}…${secret.slice(-4)}`;
}

export function maskChannelConfig(channel: Channel, config: ChannelConfig): ChannelConfig {
  if (channel === 'webhook') {
    const webhook = config as WebhookConfig;
    return { url: webhook.url, secret: maskSecret(webhook.secret), send_resolved: webhook.send_resolved };
  }
  const slack = config as SlackConfig;
  return { webhook_url: maskSecret(slack.webhook_url), send_resolved: slack.send_resolved };
}

/** Whether resolved events of this rule are notified (`send_resolved`, default true). */
export const sendsResolved = (config: ChannelConfig): boolean => config.send_resolved !== false;

/** The URLs of a channel configuration that receive notifications (for the private-address check). */
export function notificationUrls(config: ChannelConfig): { path: string; url: string }[] {
  return 'url' in config
    ? [{ path: 'channel_config.url', url: config.url }]
    : [{ path: 'channel_config.webhook_url', url: config.webhook_url }];
}
