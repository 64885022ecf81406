// Alert rules with their state; a rule's form, whose preview follows the draft as it changes; its events.
import { useState } from 'preact/hooks';
import type { PageProps } from '../main';
import { del, describeFailure, get, patch, post } from '../api';
import { ConfirmButton, Field, Options, SelectField, TextField } from '../components/form';
import { LoadedTable, type Column } from '../components/table';
import { ErrorNote, Show } from '../components/ui';
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
const WINDOWS: { value: number; label: string }[] = [
  { value: 300, label: '5 min' },
  { value: 900, label: '15 min' },
  { value: 3600, label: '1 hour' },
  { value: 21_600, label: '6 hours' },
  { value: 86_400, label: '1 day' },
  { value: 604_800, label: '7 days' },
  { value: 2_592_000, label: '30 days' },
];
const SEVERITIES: AlertRule['severity'][] = ['critical', 'warning', 'info'];
const CHANNELS: AlertRule['channel'][] = ['webhook', 'slack'];
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

/** A rule's condition as it reads: `completion_rate < 90.0%`. */
function describeCondition(rule: AlertRule): string {
  const comparator = COMPARATORS.find(({ value }) => value === rule.comparator)!.label;
  return `${rule.signal} ${comparator} ${formatSignal(rule.signal, rule.threshold)}`;
}

/** Which runs a rule watches: an agent's or all, over a window or each run as it finishes. */
function describeScope(rule: AlertRule): string {
  const windowLabel = WINDOWS.find(({ value }) => value === rule.window_seconds)?.label ?? `${rule.window_seconds} s`;
  return `${rule.agent_name ?? 'all agents'}${rule.class === 'aggregate' ? ` · ${windowLabel}` : ' · each run'}`;
}

/** The columns of the rules table; a rule's name opens its page under `base`. */
const ruleColumns = (base: string): Column<AlertRule>[] => [
  {
    label: 'Rule',
    cell: (rule) => (
      <>
        <a href={href(`${base}/${rule.id}`)}>{rule.name}</a>
        {!rule.enabled && <span class="badge">disabled</span>}
      </>
    ),
  },
  {
    label: 'State',
    cell: (rule) => (
      <>
        <span class={`badge state-${rule.state}`}>{rule.state}</span>
        {rule.last_error && (
          <span class="badge bad" title={rule.last_error}>
            error
          </span>
        )}
      </>
    ),
  },
  { label: 'Condition', cell: describeCondition },
  { label: 'Scope', cell: describeScope },
  { label: 'Severity', cell: (rule) => rule.severity },
  { label: 'Channel', cell: (rule) => rule.channel },
];

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
      <LoadedTable
        loaded={rules}
        rowKey={(rule) => rule.id}
        empty={
          <>
            No alert rules yet. A rule watches a signal — completion rate, loop rate, p95 duration, cost… — and notifies
            a webhook or Slack when it crosses a threshold.
          </>
        }
        columns={ruleColumns(base)}
      />
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
  /** A field's value and what it does when it changes: `{...bind('name')}` ties a field to the draft's name. */
  const bind = <K extends keyof Draft>(key: K) => ({
    value: draft[key],
    onValue: (value: Draft[K]) => set(key, value),
  });
  const perRun = PER_RUN.includes(draft.signal);
  const rulesPath = `/admin/orgs/${orgID}/projects/${projectID}/alert-rules`;
  const submit = async (event: Event) => {
    event.preventDefault();
    setError(undefined);
    try {
      const input = inputOf(draft);
      saved(rule ? await patch<AlertRule>(`${rulesPath}/${rule.id}`, input) : await post<AlertRule>(rulesPath, input));
    } catch (failure) {
      setError(describeFailure(failure));
    }
  };
  type Count = 'min_requests' | 'for_seconds' | 'keep_firing_for_seconds' | 'cooldown_seconds';
  const countField = (key: Count, label: string) => (
    <Field label={label}>
      <input type="number" min={0} value={draft[key]} onInput={(e) => set(key, Number(e.currentTarget.value))} />
    </Field>
  );
  const checkbox = (key: 'send_resolved' | 'enabled', label: string) => (
    <label class="check">
      <input type="checkbox" checked={draft[key]} onChange={(e) => set(key, e.currentTarget.checked)} /> {label}
    </label>
  );
  return (
    <div class="rule-editor">
      <form class="panel rule-form" onSubmit={submit}>
        <TextField label="Name" required maxLength={200} placeholder="Completion rate dropped" {...bind('name')} />
        <div class="row">
          <Field label="Signal">
            <select value={draft.signal} onChange={(e) => set('signal', e.currentTarget.value as Signal)}>
              <optgroup label="Over a window">
                <Options choices={AGGREGATE} />
              </optgroup>
              <optgroup label="Each run">
                <Options choices={PER_RUN} />
              </optgroup>
            </select>
          </Field>
          <SelectField label="Comparator" choices={COMPARATORS} {...bind('comparator')} />
          <TextField
            label={isRate(draft.signal) ? 'Threshold (0–1)' : 'Threshold'}
            required
            type="number"
            step="any"
            {...bind('threshold')}
          />
        </div>
        <div class="row">
          <TextField label="Agent (empty: all)" maxLength={200} {...bind('agent_name')} />
          {!perRun && <SelectField label="Window" choices={WINDOWS} {...bind('window_seconds')} />}
          {!perRun && countField('min_requests', 'Min. runs')}
        </div>
        <div class="row">
          {!perRun && countField('for_seconds', 'Pending for (s)')}
          {!perRun && countField('keep_firing_for_seconds', 'Keep firing for (s)')}
          {countField('cooldown_seconds', 'Cooldown (s)')}
        </div>
        <div class="row">
          <SelectField label="Severity" choices={SEVERITIES} {...bind('severity')} />
          <SelectField label="Channel" choices={CHANNELS} {...bind('channel')} />
          <TextField
            label={draft.channel === 'webhook' ? 'Webhook URL' : 'Slack webhook URL'}
            required
            type="text"
            placeholder="https://…"
            {...bind('url')}
          />
        </div>
        {checkbox('send_resolved', 'Notify when resolved')}
        {checkbox('enabled', 'Enabled')}
        {error && <ErrorNote error={error} />}
        <button type="submit" class="primary">
          {rule ? 'Save rule' : 'Create rule'}
        </button>
      </form>
      <LivePreview orgID={orgID} projectID={projectID} draft={draft} />
    </div>
  );
}

/** An event's notification: its delivery status, the attempts so far and the last HTTP status. */
function describeNotification({
  status,
  attempts,
  last_status_code: lastStatusCode,
}: NonNullable<AlertEvent['notification']>): string {
  const httpStatus = lastStatusCode ? ` · HTTP ${lastStatusCode}` : '';
  return `${status} · ${attempts} attempt${attempts === 1 ? '' : 's'}${httpStatus}`;
}

function Events({ path, signal }: { path: string; signal: Signal }) {
  const events = useLoad(() => get<AlertEvent[]>(`${path}/events`), [path]);
  return (
    <LoadedTable
      class="events"
      loaded={events}
      rowKey={(event) => event.id}
      empty="No events yet: the rule has not fired."
      columns={[
        { label: 'When', cell: (event) => f.dateTime(event.created_at) },
        {
          label: 'Event',
          cell: (event) => (
            <>
              <span class={`badge kind-${event.kind}`}>{event.kind}</span> {event.state_from} → {event.state_to}
              {event.reason ? ` (${event.reason})` : ''}
            </>
          ),
        },
        { label: 'Value', cell: (event) => formatSignal(signal, event.value) },
        { label: 'Runs', cell: (event) => event.sample_count ?? '—' },
        {
          label: 'Notification',
          cell: (event) => (event.notification ? describeNotification(event.notification) : 'none'),
        },
      ]}
    />
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
                <ConfirmButton question="Delete this rule and its history?" onConfirm={remove}>
                  Delete
                </ConfirmButton>
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
