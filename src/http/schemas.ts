// Zod building blocks shared by every capability's route declarations.
import { z } from 'zod';

// Ids are compared as strings (API keys' projects, lookups by key), so every UUID is taken in its canonical
// lower case, whatever the case it was sent in.
export const uuid = z.uuid({ message: 'must be a UUID' }).toLowerCase();

// With the `u` flag a surrogate pair is one code point: only a surrogate on its own is of category Cs. Any
// surrogate at all, paired or not, is a cheap first test that spares almost every text the exact one.
const LONE_SURROGATE = /\p{Cs}/u;
const ANY_SURROGATE = /[\uD800-\uDFFF]/;

/**
 * Whether text holds a lone UTF-16 surrogate (JSON may escape one, `"\ud800"`, but it is no character:
 * ClickHouse refuses the insert, and UTF-8 cannot carry it).
 */
export const hasLoneSurrogate = (value: string) => ANY_SURROGATE.test(value) && LONE_SURROGATE.test(value);

/** Text that every store can hold: no lone UTF-16 surrogate. */
export const text = () =>
  z.string().refine((value) => !hasLoneSurrogate(value), { message: 'must not contain a lone UTF-16 surrogate' });

/** Text Postgres can store (names, URLs, secrets): its text and jsonb types cannot hold a NUL character either. */
export const storedText = () =>
  text().refine((value) => !value.includes('\u0000'), { message: 'must not contain a NUL character' });

/** RFC 3339 with an offset (`Z` or `±hh:mm`), parsed to a Date; anything else is refused, a missing one as such. */
export const timestamp = z.iso
  .datetime({
    offset: true,
    error: (issue) => (issue.input === undefined ? 'is required' : 'must be an RFC 3339 timestamp with an offset'),
  })
  .transform((text) => new Date(text));

/** The times ClickHouse's DateTime64 can hold: [1900-01-01, 2300-01-01). */
export const STORABLE_TIMES = { from: new Date('1900-01-01T00:00:00Z'), to: new Date('2300-01-01T00:00:00Z') };

/** A timestamp to store with a run: one the store can hold, so that the run can be listed and counted. */
export const storableTimestamp = timestamp.refine((date) => date >= STORABLE_TIMES.from && date < STORABLE_TIMES.to, {
  message: 'must be between 1900-01-01 and 2299-12-31',
});

/**
 * An integer in a query string, in decimal digits only (`Number()` would also read `0x10`, `1e3` and an empty
 * string), within bounds. The OpenAPI document shows the integer it stands for, which a query string carries in
 * decimal anyway (hence a refinement, not a `regex` that would show up there as a pattern).
 */
export const queryInteger = (min: number, max: number) =>
  z
    .string()
    .refine((value) => /^\d{1,16}$/.test(value), 'must be a decimal integer')
    .transform(Number)
    .pipe(z.number().int().min(min).max(max))
    .meta({ type: 'integer', minimum: min, maximum: max });

/** The paging of a list: `limit` and `offset`, bounded so that their sum stays an exact integer. */
const MAX_PAGE = 1000;
export const pagingFields = (defaultLimit: number) => ({
  limit: queryInteger(1, MAX_PAGE).default(defaultLimit),
  offset: queryInteger(0, Number.MAX_SAFE_INTEGER - MAX_PAGE).default(0),
});

/** Responses carry RFC 3339 UTC with milliseconds. */
export const timestampOut = z.iso.datetime({ precision: 3 }).describe('RFC 3339 UTC timestamp with milliseconds');

export const toTimestamp = (date: Date): string => date.toISOString();
export const toNullableTimestamp = (date: Date | null): string | null => (date ? date.toISOString() : null);

export const pathParams = <K extends string>(...names: K[]) =>
  z.strictObject(Object.fromEntries(names.map((name) => [name, uuid])) as Record<K, typeof uuid>);

/**
 * E-mail addresses are trimmed and lower-cased before they are checked or stored. The address is a check of the
 * string, not a pipe into a second schema, so the request's JSON Schema shows its format and length too.
 */
export const email = z
  .string()
  .trim()
  .toLowerCase()
  .check(z.email({ message: 'must be a valid e-mail address' }))
  .max(254);

/** Counts, steps, tokens, milliseconds and seconds: integers, never negative. */
export const count = z.number().int().min(0);

export const role = z.enum(['admin', 'member', 'viewer']);

export const displayName = storedText().trim().min(1).max(100);
