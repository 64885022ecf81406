// The alert state machine and cooldown arithmetic, table-driven: every row of the contract's transition table.
import {
  INACTIVE,
  planFiring,
  planResolved,
  planTriggered,
  resetOnRuleChange,
  settleDeferred,
  transition,
  type EvaluationState,
  type EvaluationOutcome,
} from '../../src/alerts/state-machine';

const T0 = new Date('2026-11-21T12:00:00.000Z');
const at = (seconds: number) => new Date(T0.getTime() + seconds * 1000);

const inactive: EvaluationState = INACTIVE;
const pending = (activeAt: number): EvaluationState => ({
  state: 'pending',
  activeAt: at(activeAt),
  keepFiringSince: null,
});
const firing = (activeAt: number): EvaluationState => ({
  state: 'firing',
  activeAt: at(activeAt),
  keepFiringSince: null,
});
const recovering = (activeAt: number, since: number): EvaluationState => ({
  state: 'recovering',
  activeAt: at(activeAt),
  keepFiringSince: at(since),
});

interface Row {
  row: string;
  from: EvaluationState;
  outcome: EvaluationOutcome;
  t: number;
  forSeconds: number;
  keepFiringForSeconds: number;
  to: EvaluationState;
  event: 'firing' | 'resolved' | null;
}

const rows: Row[] = [
  // inactive | BREACH | pending (active_at = t); straight to firing when for_seconds is 0 | firing, if it fired
  {
    row: 'inactive, BREACH, for 0 → firing, notified',
    from: inactive,
    outcome: 'BREACH',
    t: 60,
    forSeconds: 0,
    keepFiringForSeconds: 0,
    to: firing(60),
    event: 'firing',
  },
  {
    row: 'inactive, BREACH, for 120 → pending (active_at = t), silent',
    from: inactive,
    outcome: 'BREACH',
    t: 60,
    forSeconds: 120,
    keepFiringForSeconds: 0,
    to: pending(60),
    event: null,
  },
  {
    row: 'inactive, OK → inactive',
    from: inactive,
    outcome: 'OK',
    t: 60,
    forSeconds: 0,
    keepFiringForSeconds: 0,
    to: inactive,
    event: null,
  },
  {
    row: 'inactive, NO_DATA → inactive',
    from: inactive,
    outcome: 'NO_DATA',
    t: 60,
    forSeconds: 0,
    keepFiringForSeconds: 0,
    to: inactive,
    event: null,
  },
  // pending | BREACH and t − active_at ≥ for_seconds | firing (a new episode) | firing
  {
    row: 'pending, BREACH, t − active_at = for → firing, notified',
    from: pending(0),
    outcome: 'BREACH',
    t: 120,
    forSeconds: 120,
    keepFiringForSeconds: 0,
    to: firing(0),
    event: 'firing',
  },
  {
    row: 'pending, BREACH, t − active_at > for → firing, notified',
    from: pending(0),
    outcome: 'BREACH',
    t: 180,
    forSeconds: 120,
    keepFiringForSeconds: 0,
    to: firing(0),
    event: 'firing',
  },
  {
    row: 'pending, BREACH, t − active_at < for → pending, silent',
    from: pending(0),
    outcome: 'BREACH',
    t: 60,
    forSeconds: 120,
    keepFiringForSeconds: 0,
    to: pending(0),
    event: null,
  },
  // pending | OK or NO_DATA | inactive | nothing
  {
    row: 'pending, OK → inactive, silent',
    from: pending(0),
    outcome: 'OK',
    t: 60,
    forSeconds: 120,
    keepFiringForSeconds: 0,
    to: inactive,
    event: null,
  },
  {
    row: 'pending, NO_DATA → inactive, silent',
    from: pending(0),
    outcome: 'NO_DATA',
    t: 60,
    forSeconds: 120,
    keepFiringForSeconds: 0,
    to: inactive,
    event: null,
  },
  // firing | BREACH → stays firing
  {
    row: 'firing, BREACH → firing, silent',
    from: firing(0),
    outcome: 'BREACH',
    t: 60,
    forSeconds: 0,
    keepFiringForSeconds: 0,
    to: firing(0),
    event: null,
  },
  // firing | OK or NO_DATA | recovering (keep_firing_since = t); resolved at once when keep_firing_for is 0 |
  //   resolved, if it resolved
  {
    row: 'firing, OK, keep 0 → inactive, resolved',
    from: firing(0),
    outcome: 'OK',
    t: 60,
    forSeconds: 0,
    keepFiringForSeconds: 0,
    to: inactive,
    event: 'resolved',
  },
  {
    row: 'firing, NO_DATA, keep 0 → inactive, resolved',
    from: firing(0),
    outcome: 'NO_DATA',
    t: 60,
    forSeconds: 0,
    keepFiringForSeconds: 0,
    to: inactive,
    event: 'resolved',
  },
  {
    row: 'firing, OK, keep 120 → recovering (since = t), silent',
    from: firing(0),
    outcome: 'OK',
    t: 60,
    forSeconds: 0,
    keepFiringForSeconds: 120,
    to: recovering(0, 60),
    event: null,
  },
  {
    row: 'firing, NO_DATA, keep 120 → recovering, silent',
    from: firing(0),
    outcome: 'NO_DATA',
    t: 60,
    forSeconds: 0,
    keepFiringForSeconds: 120,
    to: recovering(0, 60),
    event: null,
  },
  // recovering | BREACH | firing (same episode) | nothing
  {
    row: 'recovering, BREACH → firing (same episode), silent',
    from: recovering(0, 60),
    outcome: 'BREACH',
    t: 120,
    forSeconds: 0,
    keepFiringForSeconds: 120,
    to: firing(0),
    event: null,
  },
  // recovering | OK or NO_DATA and t − keep_firing_since ≥ keep_firing_for | inactive | resolved
  {
    row: 'recovering, OK, t − since = keep → inactive, resolved',
    from: recovering(0, 60),
    outcome: 'OK',
    t: 180,
    forSeconds: 0,
    keepFiringForSeconds: 120,
    to: inactive,
    event: 'resolved',
  },
  {
    row: 'recovering, NO_DATA, t − since > keep → inactive, resolved',
    from: recovering(0, 60),
    outcome: 'NO_DATA',
    t: 240,
    forSeconds: 0,
    keepFiringForSeconds: 120,
    to: inactive,
    event: 'resolved',
  },
  {
    row: 'recovering, OK, t − since < keep → recovering, silent',
    from: recovering(0, 60),
    outcome: 'OK',
    t: 120,
    forSeconds: 0,
    keepFiringForSeconds: 120,
    to: recovering(0, 60),
    event: null,
  },
  // any | ERROR | unchanged; last_error set | nothing
  {
    row: 'inactive, ERROR → unchanged',
    from: inactive,
    outcome: 'ERROR',
    t: 60,
    forSeconds: 0,
    keepFiringForSeconds: 0,
    to: inactive,
    event: null,
  },
  {
    row: 'pending, ERROR → unchanged (even past for)',
    from: pending(0),
    outcome: 'ERROR',
    t: 600,
    forSeconds: 120,
    keepFiringForSeconds: 0,
    to: pending(0),
    event: null,
  },
  {
    row: 'firing, ERROR → unchanged',
    from: firing(0),
    outcome: 'ERROR',
    t: 60,
    forSeconds: 0,
    keepFiringForSeconds: 0,
    to: firing(0),
    event: null,
  },
  {
    row: 'recovering, ERROR → unchanged (even past keep)',
    from: recovering(0, 60),
    outcome: 'ERROR',
    t: 600,
    forSeconds: 0,
    keepFiringForSeconds: 120,
    to: recovering(0, 60),
    event: null,
  },
];

describe('transition', () => {
  it.each(rows)('$row', ({ from, outcome, t, forSeconds, keepFiringForSeconds, to, event }) => {
    const step = transition(from, outcome, at(t), { forSeconds, keepFiringForSeconds });
    expect(step.next).toEqual(to);
    expect(step.event).toBe(event);
    expect(step.recordError).toBe(outcome === 'ERROR');
  });
});

describe('resetOnRuleChange (disable, redefine)', () => {
  it.each([
    { from: inactive, event: null },
    { from: pending(0), event: null },
    { from: firing(0), event: 'resolved' },
    { from: recovering(0, 60), event: 'resolved' },
  ])('$from.state → inactive, event $event', ({ from, event }) => {
    expect(resetOnRuleChange(from)).toEqual({ next: INACTIVE, event, recordError: false });
  });
});

describe('cooldown of aggregate rules', () => {
  const none = { lastNotifiedAt: null, deferredEventId: null };

  it.each([
    { case: 'first notification ever', cooldown: none, t: 0, dueAt: 0, deferred: null, last: 0 },
    {
      case: 'cooldown 0 never defers',
      cooldown: { lastNotifiedAt: at(0), deferredEventId: null },
      cooldownSeconds: 0,
      t: 1,
      dueAt: 1,
      deferred: null,
      last: 1,
    },
    {
      case: 'after the cooldown',
      cooldown: { lastNotifiedAt: at(0), deferredEventId: null },
      t: 600,
      dueAt: 600,
      deferred: null,
      last: 600,
    },
    {
      case: 'inside the cooldown: deferred to its end',
      cooldown: { lastNotifiedAt: at(0), deferredEventId: null },
      t: 300,
      dueAt: 600,
      deferred: 'e2',
      last: 0,
    },
  ])('planFiring: $case', ({ cooldown, cooldownSeconds = 600, t, dueAt, deferred, last }) => {
    const plan = planFiring(cooldown, cooldownSeconds, at(t), 'e2');
    expect(plan.delivery).toEqual({ dueAt: at(dueAt), status: 'queued' });
    expect(plan.next).toEqual({ lastNotifiedAt: at(last), deferredEventId: deferred });
  });

  it.each([
    {
      case: 'nothing waits, send_resolved',
      cooldown: { lastNotifiedAt: at(0), deferredEventId: null },
      sendResolved: true,
      t: 300,
      suppress: null,
      delivery: 'queued',
    },
    {
      case: 'nothing waits, send_resolved false',
      cooldown: { lastNotifiedAt: at(0), deferredEventId: null },
      sendResolved: false,
      t: 300,
      suppress: null,
      delivery: null,
    },
    {
      case: 'firing still waits: neither is sent',
      cooldown: { lastNotifiedAt: at(0), deferredEventId: 'e2' },
      sendResolved: true,
      t: 500,
      suppress: 'e2',
      delivery: 'suppressed',
    },
    {
      case: 'the waiting firing went out: resolved is sent',
      cooldown: { lastNotifiedAt: at(0), deferredEventId: 'e2' },
      sendResolved: true,
      t: 700,
      suppress: null,
      delivery: 'queued',
    },
  ])('planResolved: $case', ({ cooldown, sendResolved, t, suppress, delivery }) => {
    const plan = planResolved(cooldown, 600, at(t), sendResolved);
    expect(plan.suppressEventId).toBe(suppress);
    expect(plan.delivery?.status ?? null).toBe(delivery);
    expect(plan.next.deferredEventId).toBeNull();
  });

  it('settles a deferred notification once its time has come (it becomes the last one sent)', () => {
    const waiting = { lastNotifiedAt: at(0), deferredEventId: 'e2' };
    expect(settleDeferred(waiting, 600, at(599))).toEqual(waiting);
    expect(settleDeferred(waiting, 600, at(600))).toEqual({ lastNotifiedAt: at(600), deferredEventId: null });
  });
});

describe('cooldown of per_run rules', () => {
  it.each([
    { case: 'first breach: sent', last: null, count: 0, t: 0, status: 'queued', carried: 0, nextCount: 0, nextLast: 0 },
    {
      case: 'inside the cooldown: suppressed and counted',
      last: 0,
      count: 0,
      t: 60,
      status: 'suppressed',
      carried: 0,
      nextCount: 1,
      nextLast: 0,
    },
    {
      case: 'inside again: counted',
      last: 0,
      count: 1,
      t: 120,
      status: 'suppressed',
      carried: 0,
      nextCount: 2,
      nextLast: 0,
    },
    {
      case: 'after the cooldown: sent, carrying the count',
      last: 0,
      count: 2,
      t: 600,
      status: 'queued',
      carried: 2,
      nextCount: 0,
      nextLast: 600,
    },
  ])('planTriggered: $case', ({ last, count, t, status, carried, nextCount, nextLast }) => {
    const plan = planTriggered({ lastNotifiedAt: last === null ? null : at(last), suppressedCount: count }, 600, at(t));
    expect(plan.delivery.status).toBe(status);
    expect(plan.eventSuppressedCount).toBe(carried);
    expect(plan.next).toEqual({ lastNotifiedAt: at(nextLast), suppressedCount: nextCount });
  });
});
