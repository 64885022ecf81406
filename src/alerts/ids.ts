// Ids of alert rules and events: UUIDv7 that strictly increase within the process, so that rows of the same instant
// keep the order they were made in (rules are listed by creation time, events newest first, each then by id).
import { uuidv7 } from '../ids';

let lastIdMillis = 0;

function increasingUuidv7(): string {
  lastIdMillis = Math.max(Date.now(), lastIdMillis + 1);
  return uuidv7(lastIdMillis);
}

export const newRuleId = (): string => increasingUuidv7();
export const newEventId = (): string => increasingUuidv7();
