// Alert rules with their state; a rule's form, whose preview follows the draft as it changes; its events.
import { useState } from 'preact/hooks';
import type { PageProps } from '../main';
import { ApiError, del, get, patch, post } from '../api';
import { ErrorNote, Field, Show } from '../components/ui';
import * as f from '../format';
import { useDebounced, useLoad } from '../hooks';
import { href, navigate } from '../router';
import type { AlertEvent, AlertRule, DraftRule, Preview, RuleInput } from '../types';

type Signal = AlertRule['signal'];
const AGGREGATE: Signal[] = [
  'completion_rate',
  'failure_rate',
  'loop_rate',
  'duration_p50_ms',
  'duration_p95_ms',
  'duration_p99_ms',
  'total_runs',
  'avg_cost_usd',
  'total_cost_usd',
  'avg_tokens',
];
const PER_RUN: Signal[] = ['loop_detected', 'run_cost_usd', 'run_tokens', 'run_duration_ms', 'run_steps'];
const COMPARATORS: { value: AlertRule['comparator']; label: string }[] = [
  { value: 'gt', label: '>' },
  { value: 'gte', label: '≥' },
  { value: 'lt', label: '<' },
  { value: 'lte', label: '≤' },
];
const WINDOWS: [number, string][] = [
  [300, '5 min'],
  [900, '15 min'],
  [3600, '1 hour'],
  [21_600, '6 hours'],
  [86_400, '1 day'],
  [604_800, '7 days'],
  [2_592_000, '30 days'],
];
const SEVERITIES: AlertRule['severity'][] = ['critical', 'warning', 'info'];
const isRate = (signal: Signal) => signal.endsWith('_rate');

/** How a signal's value reads. */
function formatSignal(signal: Signal, value: number | null): string {
  if (value === null) return '—';
  if (isRate(signal)) return f.percent(value);
  if (signal.includes('cost')) return f.usd(value);
  if (signal.includes('duration')) return f.duration(value);
  return f.count(value);
}

interface Draft {
  name: string;
  signal: Signal;
  comparator: AlertRule['comparator'];
  threshold: string;
  agent_name: string;
  window_seconds: number;
  for_seconds: number;
  keep_firing_for_seconds: number;
  cooldown_seconds: number;
  min_requests: number;
  severity: AlertRule['severity'];
  channel: AlertRule['channel'];
  url: string;
  send_resolved: boolean;
  enabled: boolean;
}

const NEW_RULE: Draft = {
  name: '',
  signal: 'completion_rate',
  comparator: 'lt',
  threshold: '0.9',
  agent_name: '',
  window_seconds: 300,
  for_seconds: 0,
  keep_firing_for_seconds: 0,
  cooldown_seconds: 600,
  min_requests: 10,
  severity: 'warning',
  channel: 'webhook',
  url: '',
  send_resolved: true,
  enabled: true,
};

type ChannelConfig = { url?: string; webhook_url?: string; secret?: string; send_resolved: boolean };

function draftOf(rule: AlertRule): Draft {
  const config = rule.channel_config as ChannelConfig;
  return {
    ...rule,
    threshold: String(rule.threshold),
    agent_name: rule.agent_name ?? '',
    url: config.url ?? config.webhook_url ?? '',
    send_resolved: config.send_resolved,
  };
}

function inputOf(draft: Draft): RuleInput {
  const perRun = PER_RUN.includes(draft.signal);
  // A masked Slack URL sent back keeps the stored one; a webhook's secret, not sent, is kept (or generated).
  const config =
    draft.channel === 'webhook'
      ? { url: draft.url, send_resolved: draft.send_resolved }
      : { webhook_url: draft.url, send_resolved: draft.send_resolved };
  return {
    name: draft.name,
    class: perRun ? 'per_run' : 'aggregate',
    signal: draft.signal,
    comparator: draft.comparator,
    threshold: Number(draft.threshold),
    agent_name: draft.agent_name || null,
    severity: draft.severity,
    channel: draft.channel,
    enabled: draft.enabled,
    channel_config: config,
    ...(perRun
      ? {}
      : {
          window_seconds: draft.window_seconds,
          for_seconds: draft.for_seconds,
          keep_firing_for_seconds: draft.keep_firing_for_seconds,
          min_requests: draft.min_requests,
        }),
    cooldown_seconds: draft.cooldown_seconds,
  } as RuleInput;
}

export function AlertsPage({ params }: PageProps) {
  const { orgID, projectID } = params;
  const base = `/orgs/${orgID}/projects/${projectID}/alerts`;
  const rules = useLoad(
    () => get<AlertRule[]>(`/admin/orgs/${orgID}/projects/${projectID}/alert-rules`),
    [orgID, projectID],
  );
  return (
    <>
      <div class="page-head">
        <h1>Alerts</h1>
        <span class="spacer" />
        <a class="button primary" href={href(`${base}/new`)}>
          New rule
        </a>
      </div>
      <Show loaded={rules}>
        {(list) =>
          list.length === 0 ? (
            <p class="muted">
              No alert rules yet. A rule watches a signal — completion rate, loop rate, p95 duration, cost… — and
              notifies a webhook or Slack when it crosses a threshold.
            </p>
          ) : (
            <table class="table">
              <thead>
                <tr>
                  <th>Rule</th>
                  <th>State</th>
                  <th>Condition</th>
                  <th>Scope</th>
                  <th>Severity</th>
                  <th>Channel</th>
                </tr>
              </thead>
              <tbody>
                {list.map((rule) => (
                  <tr key={rule.id}>
                    <td>
                      <a href={href(`${base}/${rule.id}`)}>{rule.name}</a>
                      {!rule.enabled && <span class="badge">disabled</span>}
                    </td>
                    <td>
                      <span class={`badge state-${rule.state}`}>{rule.state}</span>
                      {rule.last_error && (
                        <span class="badge bad" title={rule.last_error}>
                          error
                        </span>
                      )}
                    </td>
                    <td>
                      {rule.signal} {COMPARATORS.find((c) => c.value === rule.comparator)?.label}{' '}
                      {formatSignal(rule.signal, rule.threshold)}
                    </td>
                    <td>
                      {rule.agent_name ?? 'all agents'}
                      {rule.class === 'aggregate'
                        ? ` · ${WINDOWS.find(([s]) => s === rule.window_seconds)?.[1] ?? `${rule.window_seconds} s`}`
                        : ' · each run'}
                    </td>
                    <td>{rule.severity}</td>
                    <td>{rule.channel}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )
        }
      </Show>
    </>
  );
}

/** The preview of the draft's signal over its window, now: value, sample count, whether it would breach. */
function LivePreview({ orgID, projectID, draft }: { orgID: string; projectID: string; draft: Draft }) {
  const settled = useDebounced<DraftRule>(
    {
      signal: draft.signal,
      comparator: draft.comparator,
      threshold: Number(draft.threshold),
      agent_name: draft.agent_name || null,
      window_seconds: draft.window_seconds,
      min_requests: draft.min_requests,
    },
    250,
  );
  const perRun = PER_RUN.includes(draft.signal);
  const preview = useLoad(
    () =>
      perRun || Number.isNaN(settled.threshold)
        ? Promise.resolve(undefined)
        : post<Preview>(`/admin/orgs/${orgID}/projects/${projectID}/alert-rules/preview`, settled),
    [orgID, projectID, JSON.stringify(settled), perRun],
  );
  if (perRun)
    return (
      <aside class="preview muted">Per-run rules are checked as each run finishes: there is nothing to preview.</aside>
    );
  return (
    <aside class="preview" aria-live="polite" data-loading={preview.loading}>
      <h3>Preview, now</h3>
      {preview.error ? (
        <ErrorNote error={preview.error} />
      ) : (
        preview.data && (
          <>
            <div class="preview-value">{formatSignal(draft.signal, preview.data.value)}</div>
            <div class="muted">
              {preview.data.scope_label} · {f.count(preview.data.sample_count)} runs in the sample
            </div>
            <div class={`verdict ${preview.data.would_breach ? 'bad' : 'good'}`}>
              {preview.data.would_breach
                ? 'Would fire'
                : preview.data.sample_count < settled.min_requests!
                  ? `Would not fire: fewer than ${settled.min_requests} runs`
                  : 'Would not fire'}
            </div>
          </>
        )
      )}
    </aside>
  );
}

function RuleForm({
  orgID,
  projectID,
  rule,
  saved,
}: {
  orgID: string;
  projectID: string;
  rule?: AlertRule;
  saved: (rule: AlertRule) => void;
}) {
  const [draft, setDraft] = useState<Draft>(rule ? draftOf(rule) : NEW_RULE);
  const [error, setError] = useState<Error>();
  const set = <K extends keyof Draft>(key: K, value: Draft[K]) => setDraft({ ...draft, [key]: value });
  const perRun = PER_RUN.includes(draft.signal);
  const rulesPath = `/admin/orgs/${orgID}/projects/${projectID}/alert-rules`;
  const submit = async (event: Event) => {
    event.preventDefault();
    setError(undefined);
    try {
      const input = inputOf(draft);
      saved(rule ? await patch<AlertRule>(`${rulesPath}/${rule.id}`, input) : await post<AlertRule>(rulesPath, input));
    } catch (failure) {
      setError(
        failure instanceof ApiError && failure.details.length > 0
          ? new Error(failure.details.map((d) => `${d.path}: ${d.message}`).join('; '))
          : (failure as Error),
      );
    }
  };
  const seconds = (key: 'for_seconds' | 'keep_firing_for_seconds' | 'cooldown_seconds', label: string) => (
    <Field label={label}>
      <input type="number" min={0} value={draft[key]} onInput={(e) => set(key, Number(e.currentTarget.value))} />
    </Field>
  );
  return (
    <div class="rule-editor">
      <form class="panel rule-form" onSubmit={submit}>
        <Field label="Name">
          <input
            required
            maxLength={200}
            value={draft.name}
            placeholder="Completion rate dropped"
            onInput={(e) => set('name', e.currentTarget.value)}
          />
        </Field>
        <div class="row">
          <Field label="Signal">
            <select value={draft.signal} onChange={(e) => set('signal', e.currentTarget.value as Signal)}>
              <optgroup label="Over a window">
                {AGGREGATE.map((s) => (
                  <option key={s} value={s}>
                    {s}
                  </option>
                ))}
              </optgroup>
              <optgroup label="Each run">
                {PER_RUN.map((s) => (
                  <option key={s} value={s}>
                    {s}
                  </option>
                ))}
              </optgroup>
            </select>
          </Field>
          <Field label="Comparator">
            <select
              value={draft.comparator}
              onChange={(e) => set('comparator', e.currentTarget.value as Draft['comparator'])}
            >
              {COMPARATORS.map(({ value, label }) => (
                <option key={value} value={value}>
                  {label}
                </option>
              ))}
            </select>
          </Field>
          <Field label={isRate(draft.signal) ? 'Threshold (0–1)' : 'Threshold'}>
            <input
              required
              type="number"
              step="any"
              value={draft.threshold}
              onInput={(e) => set('threshold', e.currentTarget.value)}
            />
          </Field>
        </div>
        <div class="row">
          <Field label="Agent (empty: all)">
            <input maxLength={200} value={draft.agent_name} onInput={(e) => set('agent_name', e.currentTarget.value)} />
          </Field>
          {!perRun && (
            <Field label="Window">
              <select
                value={draft.window_seconds}
                onChange={(e) => set('window_seconds', Number(e.currentTarget.value))}
              >
                {WINDOWS.map(([value, label]) => (
                  <option key={value} value={value}>
                    {label}
                  </option>
                ))}
              </select>
            </Field>
          )}
          {!perRun && (
            <Field label="Min. runs">
              <input
                type="number"
                min={0}
                value={draft.min_requests}
                onInput={(e) => set('min_requests', Number(e.currentTarget.value))}
              />
            </Field>
          )}
        </div>
        <div class="row">
          {!perRun && seconds('for_seconds', 'Pending for (s)')}
          {!perRun && seconds('keep_firing_for_seconds', 'Keep firing for (s)')}
          {seconds('cooldown_seconds', 'Cooldown (s)')}
        </div>
        <div class="row">
          <Field label="Severity">
            <select
              value={draft.severity}
              onChange={(e) => set('severity', e.currentTarget.value as Draft['severity'])}
            >
              {SEVERITIES.map((s) => (
                <option key={s} value={s}>
                  {s}
                </option>
              ))}
            </select>
          </Field>
          <Field label="Channel">
            <select value={draft.channel} onChange={(e) => set('channel', e.currentTarget.value as Draft['channel'])}>
              <option value="webhook">webhook</option>
              <option value="slack">slack</option>
            </select>
          </Field>
          <Field label={draft.channel === 'webhook' ? 'Webhook URL' : 'Slack webhook URL'}>
            <input
              required
              type="text"
              value={draft.url}
              placeholder="https://…"
              onInput={(e) => set('url', e.currentTarget.value)}
            />
          </Field>
        </div>
        <label class="check">
          <input
            type="checkbox"
            checked={draft.send_resolved}
            onChange={(e) => set('send_resolved', e.currentTarget.checked)}
          />{' '}
          Notify when resolved
        </label>
        <label class="check">
          <input type="checkbox" checked={draft.enabled} onChange={(e) => set('enabled', e.currentTarget.checked)} />{' '}
          Enabled
        </label>
        {error && <ErrorNote error={error} />}
        <button type="submit" class="primary">
          {rule ? 'Save rule' : 'Create rule'}
        </button>
      </form>
      <LivePreview orgID={orgID} projectID={projectID} draft={draft} />
    </div>
  );
}

function Events({ path, signal }: { path: string; signal: Signal }) {
  const events = useLoad(() => get<AlertEvent[]>(`${path}/events`), [path]);
  return (
    <Show loaded={events}>
      {(list) =>
        list.length === 0 ? (
          <p class="muted">No events yet: the rule has not fired.</p>
        ) : (
          <table class="table events">
            <thead>
              <tr>
                <th>When</th>
                <th>Event</th>
                <th>Value</th>
                <th>Runs</th>
                <th>Notification</th>
              </tr>
            </thead>
            <tbody>
              {list.map((event) => (
                <tr key={event.id}>
                  <td>{f.dateTime(event.created_at)}</td>
                  <td>
                    <span class={`badge kind-${event.kind}`}>{event.kind}</span> {event.state_from} → {event.state_to}
                    {event.reason ? ` (${event.reason})` : ''}
                  </td>
                  <td>{formatSignal(signal, event.value)}</td>
                  <td>{event.sample_count ?? '—'}</td>
                  <td>
                    {event.notification
                      ? `${event.notification.status} · ${event.notification.attempts} attempt${event.notification.attempts === 1 ? '' : 's'}${event.notification.last_status_code ? ` · HTTP ${event.notification.last_status_code}` : ''}`
                      : 'none'}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )
      }
    </Show>
  );
}

/** A new webhook rule's signing secret: the create response is the only one that shows it. */
function NewSecret({ rule, next }: { rule: AlertRule; next: () => void }) {
  return (
    <div class="panel new-key" role="status">
      <strong>Rule created. Its webhook signing secret — copy it now, it is shown only this once:</strong>
      <pre data-testid="webhook-secret">{(rule.channel_config as ChannelConfig).secret}</pre>
      <button type="button" class="primary" onClick={next}>
        Open the rule
      </button>
    </div>
  );
}

export function RulePage({ params }: PageProps) {
  const { orgID, projectID, ruleID } = params;
  const [created, setCreated] = useState<AlertRule>();
  const alerts = `/orgs/${orgID}/projects/${projectID}/alerts`;
  const path = `/admin/orgs/${orgID}/projects/${projectID}/alert-rules/${ruleID}`;
  const isNew = ruleID === 'new';
  const rule = useLoad(() => (isNew ? Promise.resolve(null) : get<AlertRule>(path)), [path]);
  const remove = async () => {
    if (!confirm('Delete this rule and its history?')) return;
    await del(path);
    navigate(alerts);
  };
  return (
    <>
      <p>
        <a href={href(alerts)}>← Alerts</a>
      </p>
      <Show loaded={rule}>
        {(found) => (
          <>
            <div class="page-head">
              <h1>{found ? found.name : 'New alert rule'}</h1>
              {found && <span class={`badge state-${found.state}`}>{found.state}</span>}
              <span class="spacer" />
              {found && (
                <button type="button" class="danger" onClick={remove}>
                  Delete
                </button>
              )}
            </div>
            {found?.last_error && <div class="error">Last evaluation failed: {found.last_error}</div>}
            {created ? (
              <NewSecret rule={created} next={() => navigate(`${alerts}/${created.id}`)} />
            ) : (
              <RuleForm
                key={found?.id ?? 'new'}
                orgID={orgID}
                projectID={projectID}
                rule={found ?? undefined}
                saved={(savedRule) =>
                  !isNew
                    ? rule.reload()
                    : savedRule.channel === 'webhook'
                      ? setCreated(savedRule)
                      : navigate(`${alerts}/${savedRule.id}`)
                }
              />
            )}
            {found && (
              <>
                <h2>Events</h2>
                <Events path={path} signal={found.signal} />
              </>
            )}
          </>
        )}
      </Show>
    </>
  );
}
