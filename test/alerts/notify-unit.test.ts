// Pure parts of notifications: Standard Webhooks signatures, the retry policy, and the Slack message's wording.
import type { AlertEventRow, AlertRuleRow } from '../../src/alerts/rows';
import {
  backoffDelayMs,
  decideRetry,
  GIVE_UP_AFTER_MS,
  isRetryableStatus,
  parseRetryAfter,
} from '../../src/alerts/notify/retry';
import { signWebhook, verifyWebhook } from '../../src/alerts/notify/signature';
import { formatWindow } from '../../src/alerts/scope-label';
import {
  buildSlackMessage,
  eventLink,
  eventScopeLabel,
  formatSignalValue,
  SlackPacer,
} from '../../src/alerts/notify/slack';

describe('Standard Webhooks signature', () => {
  // The specification's published test vector: a receiver's stock library must accept what we send.
  const vector = {
    secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
    id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
    timestamp: 1614265330,
    body: '{"test": 2432232314}',
    signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
  };
  const at = new Date(vector.timestamp * 1000);

  it('reproduces the specification test vector', () => {
    expect(signWebhook(vector.secret, vector.id, vector.timestamp, vector.body)).toBe(vector.signature);
  });

  it('verifies a good request, also among several signatures', () => {
    expect(verifyWebhook(vector.secret, vector, { now: at })).toBe(true);
    expect(verifyWebhook(vector.secret, { ...vector, signature: `v1,bm9wZQ== ${vector.signature}` }, { now: at })).toBe(
      true,
    );
  });

  it.each([
    ['a tampered body', { body: '{"test": 2432232315}' }, {}],
    ['another id', { id: 'msg_other' }, {}],
    ['a malformed signature', { signature: 'v1,' }, {}],
    ['a signature of another scheme', { signature: `v1a,${vector.signature.slice(3)}` }, {}],
    ['a timestamp over 5 minutes old', {}, { now: new Date(at.getTime() + 301_000) }],
    ['a timestamp that is not a number', { timestamp: 'yesterday' }, {}],
  ])('refuses %s', (_label, change, options) => {
    expect(verifyWebhook(vector.secret, { ...vector, ...change }, { now: at, ...options })).toBe(false);
  });

  it('refuses the wrong secret', () => {
    expect(verifyWebhook('whsec_' + Buffer.from('another key entirely').toString('base64'), vector, { now: at })).toBe(
      false,
    );
  });
});

describe('retry policy', () => {
  it.each([
    [200, false],
    [400, false],
    [401, false],
    [404, false],
    [410, false],
    [422, false],
    [408, true],
    [429, true],
    [500, true],
    [502, true],
    [503, true],
    [504, true],
  ])('status %i retryable: %s', (status, retryable) => {
    expect(isRetryableStatus(status)).toBe(retryable);
  });

  it.each([
    [1, 5_000],
    [2, 10_000],
    [3, 20_000],
    [4, 40_000],
    [10, 2_560_000],
    [11, 3_600_000],
    [40, 3_600_000],
  ])('after %i failed attempts waits %i ms (no jitter)', (attempts, delay) => {
    expect(backoffDelayMs(attempts, () => 0.5)).toBe(delay);
  });

  it('jitters by at most 20 % either way', () => {
    expect(backoffDelayMs(3, () => 0)).toBe(16_000);
    expect(backoffDelayMs(3, () => 0.999999)).toBeCloseTo(24_000, -1);
  });

  const now = new Date('2026-11-21T10:00:00.000Z');
  it.each([
    ['120', 120_000],
    ['0', 0],
    ['Sat, 21 Nov 2026 10:05:00 GMT', 300_000],
    ['Sat, 21 Nov 2026 09:00:00 GMT', 0],
    ['soon', null],
    [undefined, null],
  ])('Retry-After %p is %p ms', (header, expected) => {
    expect(parseRetryAfter(header, now)).toBe(expected);
  });

  it('takes the larger of backoff and Retry-After', () => {
    const base = { now, queuedAt: now, attempts: 1, random: () => 0.5 };
    expect(decideRetry({ ...base, retryAfterMs: 120_000 })).toEqual({
      retry: true,
      nextAttemptAt: new Date(now.getTime() + 120_000),
    });
    expect(decideRetry({ ...base, retryAfterMs: 1_000 })).toEqual({
      retry: true,
      nextAttemptAt: new Date(now.getTime() + 5_000),
    });
  });

  it('tries a last time at the 24 h deadline, and gives up at or after it', () => {
    const queuedAt = new Date(now.getTime() - GIVE_UP_AFTER_MS + 60_000);
    expect(decideRetry({ now, queuedAt, attempts: 20, retryAfterMs: null, random: () => 0.5 })).toEqual({
      retry: true,
      nextAttemptAt: new Date(queuedAt.getTime() + GIVE_UP_AFTER_MS),
    });
    expect(
      decideRetry({ now, queuedAt: new Date(now.getTime() - GIVE_UP_AFTER_MS), attempts: 20, retryAfterMs: null }),
    ).toEqual({ retry: false });
  });
});

describe('Slack message', () => {
  const created = new Date('2026-11-21T10:00:00.000Z');
  const rule = {
    id: '0196a000-0000-7000-8000-000000000001',
    project_id: '0196a000-0000-7000-8000-0000000000aa',
    name: 'Planner fails',
    class: 'aggregate',
    signal: 'failure_rate',
    comparator: 'gt',
    threshold: 0.1,
    agent_name: 'planner',
    user_id: null,
    window_seconds: 300,
    severity: 'critical',
    channel: 'slack',
    channel_config: { webhook_url: 'https://hooks.slack.com/services/T/B/x', send_resolved: true },
  } as unknown as AlertRuleRow;
  const event = {
    id: '0196a000-0000-7000-8000-000000000002',
    rule_id: rule.id,
    kind: 'firing',
    state_from: 'pending',
    state_to: 'firing',
    value: 0.25,
    sample_count: 40,
    threshold: 0.1,
    comparator: 'gt',
    window_start: new Date(created.getTime() - 300_000),
    window_end: created,
    run_id: null,
    reason: null,
    severity: 'critical',
    suppressed_count: 0,
    created_at: created,
  } as unknown as AlertEventRow;

  it.each([
    ['failure_rate', 0.25, '25%'],
    ['completion_rate', 0.875, '87.5%'],
    ['avg_cost_usd', 0.01234, '$0.0123'],
    ['total_cost_usd', 12.5, '$12.50'],
    ['duration_p95_ms', 12345.6, '12,346 ms'],
    ['run_tokens', 1500, '1,500'],
    ['avg_tokens', 1500.255, '1,500.26'],
    ['loop_detected', 1, 'loop detected'],
  ])('shows %s %p as %p', (signal, value, shown) => {
    expect(formatSignalValue(signal, value)).toBe(shown);
  });

  it.each([
    [60, '1m'],
    [300, '5m'],
    [3600, '1h'],
    [5400, '90m'],
    [86400, '1d'],
    [2592000, '30d'],
    [90, '90s'],
  ])('window %i s is %p', (seconds, shown) => {
    expect(formatWindow(seconds)).toBe(shown);
  });

  it('labels the scope like the preview does, or names the run', () => {
    expect(eventScopeLabel(rule, event)).toBe('agent planner · last 5m');
    expect(eventScopeLabel({ ...rule, agent_name: null, window_seconds: 3600 }, event)).toBe('all agents · last 1h');
    expect(eventScopeLabel({ ...rule, class: 'per_run' }, { ...event, run_id: 'r-1' })).toBe('agent planner · run r-1');
  });

  it('links to the window or the run under PUBLIC_URL, and to nothing without it', () => {
    expect(eventLink(rule, event, 'https://runwatch.example.com/')).toBe(
      `https://runwatch.example.com/projects/${rule.project_id}/agent/summary` +
        '?from=2026-11-21T09%3A55%3A00.000Z&to=2026-11-21T10%3A00%3A00.000Z&agent_name=planner',
    );
    expect(eventLink(rule, { ...event, run_id: 'r-1' }, 'https://runwatch.example.com')).toBe(
      `https://runwatch.example.com/projects/${rule.project_id}/agent/runs/r-1`,
    );
    expect(eventLink(rule, event, undefined)).toBeNull();
  });

  it('reads as one line in `text` and as fields in `blocks`', () => {
    const message = buildSlackMessage(rule, event, 'https://runwatch.example.com');
    expect(message.text).toBe(
      '[CRITICAL] Firing: Planner fails — failure_rate 25% (threshold &gt; 10%), agent planner · last 5m',
    );
    expect(message.blocks[0]).toEqual({
      type: 'header',
      text: { type: 'plain_text', text: 'Firing: Planner fails', emoji: true },
    });
    const fields = (message.blocks[1] as { fields: { text: string }[] }).fields.map((field) => field.text);
    expect(fields).toEqual([
      '*Severity*\n:red_circle: critical',
      '*Signal*\n`failure_rate`',
      '*Value*\n25% (40 runs)',
      '*Threshold*\n&gt; 10%',
      '*Scope*\nagent planner · last 5m',
    ]);
    expect(JSON.stringify(message.blocks)).toContain('|Open the window>');
  });

  it('says how many notifications the cooldown held back, and shows loop_detected plainly', () => {
    const loopRule = {
      ...rule,
      class: 'per_run',
      signal: 'loop_detected',
      comparator: 'gte',
      threshold: 1,
      agent_name: null,
      window_seconds: 0,
    } as AlertRuleRow;
    const triggered = {
      ...event,
      kind: 'triggered',
      value: 1,
      sample_count: null,
      threshold: 1,
      comparator: 'gte',
      run_id: 'r-9',
      window_start: null,
      window_end: null,
      suppressed_count: 3,
    } as AlertEventRow;
    const message = buildSlackMessage(loopRule, triggered, undefined);
    expect(message.text).toBe(
      '[CRITICAL] Triggered: Planner fails — loop_detected loop detected (threshold ≥ 1), all agents · run r-9',
    );
    expect(JSON.stringify(message.blocks)).toContain('3 earlier notifications held back by the cooldown');
    expect(JSON.stringify(message.blocks)).not.toContain('Open the');
  });

  it('paces one message per second per URL', () => {
    const pacer = new SlackPacer();
    const t = new Date('2026-11-21T10:00:00.000Z');
    expect(pacer.reserve('https://a', t)).toBeNull();
    expect(pacer.reserve('https://b', t)).toBeNull();
    expect(pacer.reserve('https://a', new Date(t.getTime() + 400))).toEqual(new Date(t.getTime() + 1000));
    expect(pacer.reserve('https://a', new Date(t.getTime() + 1000))).toBeNull();
  });
});

it('escapes names in the Slack text, so that a rule called <!channel> does not notify everyone', () => {
  const rule = {
    id: 'r',
    project_id: 'p',
    name: '<!channel> & co',
    class: 'aggregate',
    signal: 'total_runs',
    comparator: 'lt',
    threshold: 1,
    agent_name: '<@U123>',
    user_id: null,
    window_seconds: 3600,
    severity: 'info',
    channel: 'slack',
    channel_config: { webhook_url: 'https://x', send_resolved: true },
  } as unknown as AlertRuleRow;
  const event = {
    id: 'e',
    rule_id: 'r',
    kind: 'firing',
    value: 0,
    sample_count: 0,
    threshold: 1,
    comparator: 'lt',
    window_start: new Date(0),
    window_end: new Date(3600_000),
    run_id: null,
    reason: null,
    severity: 'info',
    suppressed_count: 0,
    created_at: new Date(3600_000),
  } as unknown as AlertEventRow;
  const message = buildSlackMessage(rule, event, undefined);
  expect(message.text).toBe(
    '[INFO] Firing: &lt;!channel&gt; &amp; co — total_runs 0 (threshold &lt; 1), agent &lt;@U123&gt; · last 1h',
  );
  // The header is plain_text, which Slack shows as written; every mrkdwn text is escaped.
  expect(message.blocks[0]).toMatchObject({ text: { type: 'plain_text', text: 'Firing: <!channel> & co' } });
  expect(JSON.stringify(message.blocks.slice(1))).not.toMatch(/<!channel>|<@U123>/);
});
