// Alert rules with their state and readable conditions; a rule's page: its form and its events, each linking to
// the runs it is about and saying how its notification went.
import { useState } from 'preact/hooks';
import type { PageProps } from '../main';
import { del, get, searchOf } from '../api';
import { ConfirmButton } from '../components/form';
import { RuleForm, WINDOWS } from '../components/rule-form';
import { LoadedTable, type Column } from '../components/table';
import { CopyButton, Show } from '../components/ui';
import * as f from '../format';
import { useLoad } from '../hooks';
import { href, navigate } from '../router';
import { describeCondition, formatSignal, isPerRun } from '../signals';
import type { AlertEvent, AlertRule } from '../types';

/** Which runs a rule watches: an agent's or all, over a window or each run as it finishes. */
function describeScope(rule: AlertRule): string {
  const windowLabel = WINDOWS.find(({ value }) => value === rule.window_seconds)?.label ?? `${rule.window_seconds} s`;
  return `${rule.agent_name ?? 'all agents'} · ${rule.class === 'aggregate' ? `last ${windowLabel}` : 'each run'}`;
}

/** A rule's state: an aggregate rule's place in its state machine; a per-run rule has none, it checks each run. */
function RuleState({ rule }: { rule: AlertRule }) {
  return (
    <>
      {isPerRun(rule.signal) ? (
        <span class="badge" title="checked on each run as it finishes">
          per run
        </span>
      ) : (
        <span class={`badge state-${rule.state}`}>{rule.state}</span>
      )}
      {!rule.enabled && <span class="badge">disabled</span>}
      {rule.last_error && (
        <span class="badge bad" title={rule.last_error}>
          error
        </span>
      )}
    </>
  );
}

/** The columns of the rules table; a rule's name opens its page under `base`. */
const ruleColumns = (base: string): Column<AlertRule>[] => [
  { label: 'Rule', cell: (rule) => <a href={href(`${base}/${rule.id}`)}>{rule.name}</a> },
  { label: 'State', cell: (rule) => <RuleState rule={rule} /> },
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

const REASONS: Record<string, string> = {
  threshold_crossed: 'the threshold was crossed',
  recovered: 'back within the threshold',
  no_data: 'too few runs to tell',
  rule_updated: 'the rule was changed',
  rule_disabled: 'the rule was disabled',
  run_finished: 'a run finished over the threshold',
  loop_detected: 'a loop was detected',
};

/** An event's notification: how its delivery went, and why it failed when it did. */
function Notification({ notification }: { notification: AlertEvent['notification'] }) {
  if (!notification) return <span class="muted">none</span>;
  const { status, attempts, last_status_code: code, last_error: why } = notification;
  const tries = `${attempts} attempt${attempts === 1 ? '' : 's'}`;
  return (
    <span class={`delivery delivery-${status}`}>
      {status} · {tries}
      {status === 'sent' && code ? ` · HTTP ${code}` : ''}
      {why && status !== 'sent' && (
        <span class="delivery-error">
          {status === 'queued' ? ' · retrying after: ' : ' · '}
          {why}
        </span>
      )}
    </span>
  );
}

/** What an event is about: the run that breached (per-run), or the window's runs (aggregate). */
function EventSubject({ event, rule, projectPath }: { event: AlertEvent; rule: AlertRule; projectPath: string }) {
  if (event.run_id) return <a href={href(`${projectPath}/runs/${event.run_id}`)}>run {event.run_id.slice(0, 8)}…</a>;
  if (!event.window_start || !event.window_end) return <span class="muted">—</span>;
  return (
    <a
      href={href(`${projectPath}/runs`, {
        from: event.window_start,
        to: event.window_end,
        agent: rule.agent_name ?? undefined,
      })}
    >
      runs {f.dateTime(event.window_start, 'minutes')} – {f.dateTime(event.window_end, 'minutes')}
    </a>
  );
}

function Events({ path, rule, projectPath }: { path: string; rule: AlertRule; projectPath: string }) {
  const events = useLoad(() => get<AlertEvent[]>(`${path}/events${searchOf({ limit: 100 })}`), [path]);
  const perRun = isPerRun(rule.signal);
  return (
    <LoadedTable
      class="events"
      loaded={events}
      rowKey={(event) => event.id}
      empty={perRun ? 'No run has breached this rule yet.' : 'No events yet: the rule has not fired.'}
      columns={[
        { label: 'When (UTC)', cell: (event) => f.dateTime(event.created_at) },
        {
          label: 'Event',
          cell: (event) => (
            <>
              <span class={`badge kind-${event.kind}`}>{event.kind}</span>{' '}
              {/* A per-run event moves no state: its from → to says nothing. */}
              {!perRun && `${event.state_from} → ${event.state_to} · `}
              {event.reason ? (REASONS[event.reason] ?? event.reason) : ''}
            </>
          ),
        },
        { label: 'Value', cell: (event) => formatSignal(rule.signal, event.value) },
        {
          label: perRun ? 'Run' : 'Runs',
          cell: (event) => (
            <>
              {!perRun && event.sample_count !== null && `${f.count(event.sample_count)} · `}
              <EventSubject event={event} rule={rule} projectPath={projectPath} />
            </>
          ),
        },
        { label: 'Notification', cell: (event) => <Notification notification={event.notification} /> },
      ]}
    />
  );
}

type ChannelConfig = { secret?: string };

/** A new webhook rule's signing secret: the create response is the only one that shows it. */
function NewSecret({ rule, next }: { rule: AlertRule; next: () => void }) {
  const secret = (rule.channel_config as ChannelConfig).secret ?? '';
  return (
    <div class="panel new-key" role="status">
      <strong>Rule created. Its webhook signing secret — copy it now, it is shown only this once:</strong>
      <pre data-testid="webhook-secret">{secret}</pre>
      <div class="inline">
        <CopyButton text={secret} label="Copy secret" />
        <button type="button" class="primary" onClick={next}>
          Open the rule
        </button>
      </div>
    </div>
  );
}

export function RulePage({ params }: PageProps) {
  const { orgID, projectID, ruleID } = params;
  const [created, setCreated] = useState<AlertRule>();
  const projectPath = `/orgs/${orgID}/projects/${projectID}`;
  const alerts = `${projectPath}/alerts`;
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
              {found && <RuleState rule={found} />}
              {found && <span class="muted">{describeCondition(found)}</span>}
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
                <Events path={path} rule={found} projectPath={projectPath} />
              </>
            )}
          </>
        )}
      </Show>
    </>
  );
}
