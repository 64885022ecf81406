// Session numbers (schema/postgres/0010): each (project, session) gets a number from Postgres once, the first time a
// flush meets it, and every row of its runs carries it to ClickHouse (`session_number`), where the hours' bitmaps of
// numbers count a window's sessions exactly (schema/clickhouse/0011, docs/sessions.md). Postgres is the one place
// every instance agrees on: two instances flushing a new session at once get the same number.
import type { Sql } from '../db/postgres';

/** What a row carries for "no session" (its session_id is ''). */
export const NO_SESSION = 0;

/** The numbers of some sessions of some projects, under the caller's keys; new sessions are numbered first. */
export type SessionNumbers = (sessions: ReadonlyMap<string, SessionOf>) => Promise<Map<string, number>>;
export interface SessionOf {
  projectId: string;
  sessionId: string;
}

/** A session's key in the maps: its project (as Postgres writes a UUID) and its id's UTF-8 bytes in hex. */
const sessionKey = (projectId: string, sessionHex: string) => `${projectId.toLowerCase()} ${sessionHex}`;
const hexOf = (sessionId: string) => Buffer.from(sessionId, 'utf8').toString('hex');

// Numbers the sessions not numbered yet and returns the numbers of all: the ones it numbered and the ones it found.
// NOT EXISTS keeps known sessions from drawing numbers of the sequence (ON CONFLICT alone draws one for every row it
// tries). A session another instance numbers meanwhile is in neither half (its row is not in this statement's
// snapshot): the caller asks again for what is missing. Ids travel as their UTF-8 bytes (bytea): any id, NUL
// included, is a key Postgres can keep.
const NUMBER_SESSIONS = `
  WITH wanted AS (
    SELECT DISTINCT project_id, decode(session_hex, 'hex') AS session_id
    FROM unnest($1::uuid[], $2::text[]) AS w(project_id, session_hex)
  ), added AS (
    INSERT INTO session_numbers (project_id, session_id)
    SELECT project_id, session_id FROM wanted
    WHERE NOT EXISTS (
      SELECT 1 FROM session_numbers known
      WHERE known.project_id = wanted.project_id AND known.session_id = wanted.session_id)
    ORDER BY project_id, session_id
    ON CONFLICT DO NOTHING
    RETURNING project_id, session_id, number
  )
  SELECT project_id, encode(session_id, 'hex') AS session_hex, number FROM added
  UNION ALL
  SELECT known.project_id, encode(known.session_id, 'hex'), known.number
  FROM session_numbers known JOIN wanted USING (project_id, session_id)`;

/** Sessions a statement numbers at most: their ids travel as two arrays of parameters. */
const SESSIONS_PER_STATEMENT = 10_000;

/** Asks twice at most: a session numbered by another instance meanwhile is found the second time. */
const ROUNDS = 2;

export function sessionNumbers(pg: Sql): SessionNumbers {
  return async (sessions) => {
    const numbers = new Map<string, number>();
    let missing = [...sessions.values()].map(({ projectId, sessionId }) => ({ projectId, hex: hexOf(sessionId) }));
    for (let round = 0; round < ROUNDS && missing.length > 0; round++) {
      for (let i = 0; i < missing.length; i += SESSIONS_PER_STATEMENT) {
        const some = missing.slice(i, i + SESSIONS_PER_STATEMENT);
        const rows = await pg.query<{ project_id: string; session_hex: string; number: string }>(NUMBER_SESSIONS, [
          some.map((session) => session.projectId),
          some.map((session) => session.hex),
        ]);
        for (const row of rows) numbers.set(sessionKey(row.project_id, row.session_hex), Number(row.number));
      }
      missing = missing.filter((session) => !numbers.has(sessionKey(session.projectId, session.hex)));
    }
    if (missing.length > 0) throw new Error(`session numbers: ${missing.length} sessions got no number`);
    return new Map(
      [...sessions].map(([key, { projectId, sessionId }]) => [
        key,
        numbers.get(sessionKey(projectId, hexOf(sessionId)))!,
      ]),
    );
  };
}
