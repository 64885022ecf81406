// The alert state machine and cooldown arithmetic, as pure functions of (state, outcome, time): no I/O, no clock.
import type { RuleState } from './allowed-values';

/** What one evaluation of an aggregate rule found (contract section 7). */
export type EvaluationOutcome = 'ERROR' | 'NO_DATA' | 'BREACH' | 'OK';

export interface EvaluationState {
  state: RuleState;
  /** When the current breach began (pending or firing); null when inactive. */
  activeAt: Date | null;
  /** When the firing rule stopped breaching (recovering); null otherwise. */
  keepFiringSince: Date | null;
}

export interface HoldTimes {
  forSeconds: number;
  keepFiringForSeconds: number;
}

export interface Transition {
  next: EvaluationState;
  /** The event this transition records, which is also what it notifies; null for silent transitions. */
  event: 'firing' | 'resolved' | null;
  /** ERROR: nothing moves, the rule's last_error is set. */
  recordError: boolean;
}

export const INACTIVE: EvaluationState = { state: 'inactive', activeAt: null, keepFiringSince: null };

const secondsBetween = (from: Date, to: Date) => (to.getTime() - from.getTime()) / 1000;
const stay = (current: EvaluationState): Transition => ({ next: current, event: null, recordError: false });

/** One evaluation at time `at`: the contract's transition table, row by row. */
export function transition(
  current: EvaluationState,
  outcome: EvaluationOutcome,
  at: Date,
  hold: HoldTimes,
): Transition {
  if (outcome === 'ERROR') return { next: current, event: null, recordError: true };
  const breach = outcome === 'BREACH';
  switch (current.state) {
    case 'inactive':
      if (!breach) return stay(current);
      if (hold.forSeconds === 0)
        return { next: { state: 'firing', activeAt: at, keepFiringSince: null }, event: 'firing', recordError: false };
      return { next: { state: 'pending', activeAt: at, keepFiringSince: null }, event: null, recordError: false };
    case 'pending': {
      if (!breach) return { next: INACTIVE, event: null, recordError: false };
      const activeAt = current.activeAt ?? at;
      if (secondsBetween(activeAt, at) >= hold.forSeconds) {
        return { next: { state: 'firing', activeAt, keepFiringSince: null }, event: 'firing', recordError: false };
      }
      return stay(current);
    }
    case 'firing':
      if (breach) return stay(current);
      if (hold.keepFiringForSeconds === 0) return { next: INACTIVE, event: 'resolved', recordError: false };
      return {
        next: { state: 'recovering', activeAt: current.activeAt, keepFiringSince: at },
        event: null,
        recordError: false,
      };
    case 'recovering': {
      // Breaching again while recovering continues the same episode, silently.
      if (breach)
        return {
          next: { state: 'firing', activeAt: current.activeAt, keepFiringSince: null },
          event: null,
          recordError: false,
        };
      const since = current.keepFiringSince ?? at;
      if (secondsBetween(since, at) >= hold.keepFiringForSeconds)
        return { next: INACTIVE, event: 'resolved', recordError: false };
      return stay(current);
    }
  }
}

/**
 * A rule disabled, deleted or redefined: an open episode (firing or recovering) resolves; a pending breach is
 * dropped.
 */
export function resetOnRuleChange(current: EvaluationState): Transition {
  const openEpisode = current.state === 'firing' || current.state === 'recovering';
  return { next: INACTIVE, event: openEpisode ? 'resolved' : null, recordError: false };
}

// ---- cooldown --------------------------------------------------------------------------------------------

export interface CooldownState {
  /** When the last firing notification went (or goes) out. */
  lastNotifiedAt: Date | null;
  /** A firing event whose notification waits for the end of the cooldown; null when none waits. */
  deferredEventId: string | null;
}

export interface PlannedDelivery {
  dueAt: Date;
  status: 'queued' | 'suppressed';
}

const addSeconds = (date: Date, seconds: number) => new Date(date.getTime() + seconds * 1000);

/** A deferred notification whose time has come is no longer deferred: it counts as the last one sent. */
export function settleDeferred(cooldown: CooldownState, cooldownSeconds: number, at: Date): CooldownState {
  if (!cooldown.deferredEventId || !cooldown.lastNotifiedAt) return cooldown;
  const dueAt = addSeconds(cooldown.lastNotifiedAt, cooldownSeconds);
  return dueAt.getTime() <= at.getTime() ? { lastNotifiedAt: dueAt, deferredEventId: null } : cooldown;
}

/** A new episode's firing notification: now, or at the end of the cooldown (then it is deferred). */
export function planFiring(
  cooldown: CooldownState,
  cooldownSeconds: number,
  at: Date,
  eventId: string,
): { delivery: PlannedDelivery; next: CooldownState } {
  const settled = settleDeferred(cooldown, cooldownSeconds, at);
  const last = settled.lastNotifiedAt;
  if (!last || secondsBetween(last, at) >= cooldownSeconds) {
    return { delivery: { dueAt: at, status: 'queued' }, next: { lastNotifiedAt: at, deferredEventId: null } };
  }
  return {
    delivery: { dueAt: addSeconds(last, cooldownSeconds), status: 'queued' },
    next: { lastNotifiedAt: last, deferredEventId: eventId },
  };
}

/**
 * An episode's resolved notification. When its firing notification still waits for the cooldown, neither is sent:
 * the waiting one is suppressed and the resolved one recorded as suppressed. `send_resolved` false: no delivery.
 */
export function planResolved(
  cooldown: CooldownState,
  cooldownSeconds: number,
  at: Date,
  sendResolved: boolean,
): { suppressEventId: string | null; delivery: PlannedDelivery | null; next: CooldownState } {
  const settled = settleDeferred(cooldown, cooldownSeconds, at);
  if (settled.deferredEventId) {
    return {
      suppressEventId: settled.deferredEventId,
      delivery: { dueAt: at, status: 'suppressed' },
      next: { lastNotifiedAt: settled.lastNotifiedAt, deferredEventId: null },
    };
  }
  return { suppressEventId: null, delivery: sendResolved ? { dueAt: at, status: 'queued' } : null, next: settled };
}

export interface PerRunCooldownState {
  lastNotifiedAt: Date | null;
  /** Notifications held back by the cooldown since the last one sent. */
  suppressedCount: number;
}

/**
 * A breaching run of a per_run rule: notified unless inside the cooldown, in which case it is recorded as suppressed
 * and counted; the next notification sent carries that count.
 */
export function planTriggered(
  cooldown: PerRunCooldownState,
  cooldownSeconds: number,
  at: Date,
): { delivery: PlannedDelivery; eventSuppressedCount: number; next: PerRunCooldownState } {
  const last = cooldown.lastNotifiedAt;
  if (!last || secondsBetween(last, at) >= cooldownSeconds) {
    return {
      delivery: { dueAt: at, status: 'queued' },
      eventSuppressedCount: cooldown.suppressedCount,
      next: { lastNotifiedAt: at, suppressedCount: 0 },
    };
  }
  return {
    delivery: { dueAt: at, status: 'suppressed' },
    eventSuppressedCount: 0,
    next: { lastNotifiedAt: last, suppressedCount: cooldown.suppressedCount + 1 },
  };
}
