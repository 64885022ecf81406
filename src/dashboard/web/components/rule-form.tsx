// An alert rule's form (create or edit): the signal picks its comparator and threshold from the contract's defaults,
// thresholds are typed as they read (percent, seconds, dollars), and a preview follows the draft as it changes.
import { useState } from 'preact/hooks';
import { describeFailure, patch, post } from '../api';
import { useDebounced, useLoad } from '../hooks';
import * as f from '../format';
import {
  AGGREGATE_SIGNALS,
  COMPARATORS,
  formatSignal,
  fromTyped,
  infoOf,
  isPerRun,
  isScoreMean,
  PER_RUN_SIGNALS,
  SCORE_MEAN,
  SIGNALS,
  thresholdLabel,
  toTyped,
  type Signal,
} from '../signals';
import type { AlertRule, DraftRule, Preview, RuleInput } from '../types';
import { Field, Options, SelectField, TextField } from './form';
import { ErrorNote } from './ui';

export const WINDOWS: { value: number; label: string }[] = [
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
const signalChoices = (signals: Signal[]) => signals.map((value) => ({ value, label: SIGNALS[value].label }));

interface Draft {
  name: string;
  signal: Signal;
  comparator: AlertRule['comparator'];
  /** As typed, in the signal's unit (percent, seconds, dollars). */
  threshold: string;
  agent_name: string;
  user_id: string;
  /** The score a score mean reads (the signal is then SCORE_MEAN). */
  score_name: string;
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

/** A draft's signal, with the contract's comparator and threshold for it (another unit's threshold means nothing). */
const withSignal = (draft: Draft, signal: Signal): Draft => ({
  ...draft,
  signal,
  comparator: infoOf(signal).comparator,
  threshold: toTyped(signal, infoOf(signal).threshold),
});

/** The draft's signal as the API takes it: a score mean with its score's name. */
const signalOf = (draft: Draft): Signal =>
  draft.signal === SCORE_MEAN ? `${SCORE_MEAN}${draft.score_name}` : draft.signal;

const NEW_RULE: Draft = withSignal(
  {
    name: '',
    signal: 'completion_rate',
    comparator: 'lt',
    threshold: '',
    agent_name: '',
    user_id: '',
    score_name: '',
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
  },
  'completion_rate',
);

type ChannelConfig = { url?: string; webhook_url?: string; secret?: string; send_resolved: boolean };

function draftOf(rule: AlertRule): Draft {
  const config = rule.channel_config as ChannelConfig;
  return {
    ...rule,
    threshold: toTyped(rule.signal, rule.threshold),
    agent_name: rule.agent_name ?? '',
    user_id: rule.user_id ?? '',
    signal: isScoreMean(rule.signal) ? SCORE_MEAN : rule.signal,
    score_name: isScoreMean(rule.signal) ? rule.signal.slice(SCORE_MEAN.length) : '',
    url: config.url ?? config.webhook_url ?? '',
    send_resolved: config.send_resolved,
  };
}

function inputOf(draft: Draft): RuleInput {
  const perRun = isPerRun(draft.signal);
  // A per-run rule has no episodes, so nothing resolves: it keeps the setting as it was.
  // A masked Slack URL sent back keeps the stored one; a webhook's secret, not sent, is kept (or generated).
  const config =
    draft.channel === 'webhook'
      ? { url: draft.url, send_resolved: draft.send_resolved }
      : { webhook_url: draft.url, send_resolved: draft.send_resolved };
  return {
    name: draft.name,
    class: perRun ? 'per_run' : 'aggregate',
    signal: signalOf(draft),
    comparator: draft.comparator,
    threshold: fromTyped(draft.signal, draft.threshold),
    agent_name: draft.agent_name || null,
    user_id: draft.user_id || null,
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

/** The preview of the draft's signal over its window, now: value, sample count, whether it would breach. */
function LivePreview({ orgID, projectID, draft }: { orgID: string; projectID: string; draft: Draft }) {
  const settled = useDebounced<DraftRule>(
    {
      signal: signalOf(draft),
      comparator: draft.comparator,
      threshold: fromTyped(draft.signal, draft.threshold),
      agent_name: draft.agent_name || null,
      user_id: draft.user_id || null,
      window_seconds: draft.window_seconds,
      min_requests: draft.min_requests,
    },
    250,
  );
  const perRun = isPerRun(draft.signal);
  // What is asked is the settled draft: while it settles, the signal shown may be another (a per-run one, say).
  const preview = useLoad(
    () =>
      isPerRun(settled.signal as Signal) || Number.isNaN(settled.threshold) || settled.signal === SCORE_MEAN
        ? Promise.resolve(undefined)
        : post<Preview>(`/admin/orgs/${orgID}/projects/${projectID}/alert-rules/preview`, settled),
    [orgID, projectID, JSON.stringify(settled)],
  );
  if (perRun)
    return (
      <aside class="preview muted">
        Per-run rules are checked on each run as it finishes (a loop, as soon as it is found): there is nothing to
        preview.
      </aside>
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
              {preview.data.scope_label} · {f.count(preview.data.sample_count)}{' '}
              {isScoreMean(draft.signal) ? 'scored runs' : 'runs'} in the sample
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

export function RuleForm({
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
  const perRun = isPerRun(draft.signal);
  const flag = infoOf(draft.signal).unit === 'flag';
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
            <select value={draft.signal} onChange={(e) => setDraft(withSignal(draft, e.currentTarget.value as Signal))}>
              <optgroup label="Over a window">
                <Options choices={signalChoices(AGGREGATE_SIGNALS)} />
              </optgroup>
              <optgroup label="Each run">
                <Options choices={signalChoices(PER_RUN_SIGNALS)} />
              </optgroup>
              <optgroup label="Scores">
                <option value={SCORE_MEAN}>Mean of a score…</option>
              </optgroup>
            </select>
          </Field>
          {draft.signal === SCORE_MEAN && (
            <TextField label="Score name" required pattern="[a-z0-9_.:\-]{1,100}" {...bind('score_name')} />
          )}
          {!flag && <SelectField label="Comparator" choices={COMPARATORS} {...bind('comparator')} />}
          {!flag && (
            <TextField
              label={thresholdLabel(draft.signal)}
              required
              type="number"
              step="any"
              min={0}
              {...bind('threshold')}
            />
          )}
          {flag && <p class="muted flag-note">Fires on each run in which a loop is detected, as soon as it is.</p>}
        </div>
        <div class="row">
          <TextField label="Agent (empty: all)" maxLength={200} {...bind('agent_name')} />
          <TextField label="User (empty: all)" maxLength={200} {...bind('user_id')} />
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
        {/* A per-run rule notifies each breaching run; it has no episode that could resolve. */}
        {!perRun && checkbox('send_resolved', 'Notify when resolved')}
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
