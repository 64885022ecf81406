// The alert events of a project in a window, as marks on its charts: when rules fired, resolved, or caught a run.
import { get, searchOf } from './api';
import type { Marker } from './components/chart';
import { describeCondition } from './signals';
import type { AlertEvent, AlertRule } from './types';
import type { Window } from './window';

// The events of each rule read back, newest first: enough for a month of a rule that fires hourly.
const EVENTS_PER_RULE = 1000;
/** At most this many marks on a chart: beyond, lines would hide the data. */
const MAX_MARKS = 200;

export interface AlertMark extends Marker {
  rule: AlertRule;
  event: AlertEvent;
}

/** The marks of the window, oldest first: firings and resolutions of aggregate rules, and per-run triggers. */
export async function loadAlertMarks(
  orgID: string,
  projectID: string,
  window: Window,
  agent: string | undefined,
): Promise<AlertMark[]> {
  const rulesPath = `/admin/orgs/${orgID}/projects/${projectID}/alert-rules`;
  const rules = (await get<AlertRule[]>(rulesPath)).filter(
    // A rule of another agent says nothing about this one's charts.
    (rule) => agent === undefined || rule.agent_name === null || rule.agent_name === agent,
  );
  const [from, to] = [Date.parse(window.from), Date.parse(window.to)];
  const perRule = await Promise.all(
    rules.map(async (rule) => {
      const events = await get<AlertEvent[]>(`${rulesPath}/${rule.id}/events${searchOf({ limit: EVENTS_PER_RULE })}`);
      return events.map((event) => ({ rule, event, atMs: Date.parse(event.created_at) }));
    }),
  );
  return perRule
    .flat()
    .filter(({ atMs }) => atMs >= from && atMs < to)
    .sort((a, b) => a.atMs - b.atMs)
    .slice(-MAX_MARKS)
    .map(({ rule, event, atMs }) => ({
      rule,
      event,
      atMs,
      kind: event.kind,
      label: `${rule.name}: ${describeCondition(rule)}`,
    }));
}
