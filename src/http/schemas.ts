// Zod building blocks shared by every capability's route declarations.
import { z } from 'zod';

// Ids are compared as strings (API keys' projects, lookups by key), so every UUID is taken in its canonical
// lower case, whatever the case it was sent in.
export const uuid = z.uuid({ message: 'must be a UUID' }).toLowerCase();

// With the `u` flag a surrogate pair is one code point: only a surrogate on its own is of category Cs.
const LONE_SURROGATE = /\p{Cs}/u;

/**
 * Text that every store can hold: no lone UTF-16 surrogate (JSON may escape one, `"\ud800"`, but it is no
 * character: ClickHouse refuses the insert, and UTF-8 cannot carry it).
 */
export const text = () => z.string().refine((value) => !LONE_SURROGATE.test(value), { message: 'must not contain a lone UTF-16 surrogate' });

/** RFC 3339 with an offset (`Z` or `±hh:mm`), parsed to a Date; anything else is refused. */
export const timestamp = z.iso.datetime({ offset: true, message: 'must be an RFC 3339 timestamp with an offset' }).transform((text) => new Date(text));

/** Responses carry RFC 3339 UTC with milliseconds. */
export const timestampOut = z.string().describe('RFC 3339 UTC timestamp with milliseconds');

export const toTimestamp = (date: Date): string => date.toISOString();
export const toNullableTimestamp = (date: Date | null): string | null => (date ? date.toISOString() : null);

export const pathParams = <K extends string>(...names: K[]) =>
  z.strictObject(Object.fromEntries(names.map((name) => [name, uuid])) as Record<K, typeof uuid>);

/** E-mail addresses are trimmed and lower-cased before they are checked or stored. */
export const email = z.string().trim().toLowerCase().pipe(z.email({ message: 'must be a valid e-mail address' }).max(254));

export const role = z.enum(['admin', 'member', 'viewer']);

export const displayName = z.string().trim().min(1).max(100);
