// Accounts and sessions: register, log in, log out, and who am I.
import type { Clock } from '../clock';
import type { PostgresStore } from '../db/postgres';
import { conflict, tooManyRequests, unauthenticated } from '../errors';
import { toNullableTimestamp, toTimestamp } from '../http/schemas';
import { uuidv7 } from '../ids';
import type { Orgs } from '../orgs';
import { loginThrottle, type LoginThrottleSettings } from './login-throttle';
import { hashPassword, verifyPassword } from './passwords';
import * as q from './queries';
import { signSessionToken } from './tokens';

interface UserRow {
  id: string;
  email: string;
  name: string;
  verified_at: Date | null;
  created_at: Date;
}

export interface AuthSettings {
  jwtSecret: string;
  sessionTtlSeconds: number;
  loginThrottle: LoginThrottleSettings;
}

/** What accounts use of organizations: registration creates the user's first one; a profile lists them. */
export type UserOrganizations = Pick<Orgs, 'createOrganization' | 'listOrganizationsOfUser'>;

export interface AuthServiceDependencies {
  pg: PostgresStore;
  clock: Clock;
  settings: AuthSettings;
  organizations: UserOrganizations;
}

const toUser = (row: UserRow) => ({
  id: row.id,
  email: row.email,
  name: row.name,
  is_verified: row.verified_at !== null,
  verified_at: toNullableTimestamp(row.verified_at),
  created_at: toTimestamp(row.created_at),
});

export function authService({ pg, clock, settings, organizations }: AuthServiceDependencies) {
  const throttle = loginThrottle(pg, settings.loginThrottle);

  async function profile(user: UserRow) {
    return { user: toUser(user), organizations: await organizations.listOrganizationsOfUser(pg, user.id) };
  }

  async function startSession(user: UserRow) {
    const issuedAt = clock.now();
    const expiresAt = new Date(issuedAt.getTime() + settings.sessionTtlSeconds * 1000);
    const sessionId = uuidv7();
    await pg.query(q.INSERT_SESSION, [sessionId, user.id, expiresAt]);
    const token = signSessionToken(settings.jwtSecret, { userId: user.id, sessionId }, issuedAt, expiresAt);
    return { ...(await profile(user)), token, expires_at: toTimestamp(expiresAt) };
  }

  return {
    async register(input: { email: string; password: string; name?: string }) {
      const name = input.name ?? input.email.split('@')[0];
      const passwordHash = await hashPassword(input.password);
      const user = await pg.transaction(async (tx) => {
        const [row] = await tx.query<UserRow>(q.INSERT_USER, [uuidv7(), input.email, name, passwordHash]);
        if (!row) throw conflict('that e-mail address is already registered');
        await organizations.createOrganization(tx, `${name}'s organization`, row.id);
        return row;
      });
      return startSession(user);
    },

    /** Logs in; `address` is the client's, whose failures (with this e-mail, and in all) delay its next attempts. */
    async login(input: { email: string; password: string }, address: string) {
      // The delay is checked before the password: a guess sent during it is not even tried.
      const wait = await throttle.waitFor(address, input.email, clock.now());
      if (wait > 0) throw tooManyRequests(wait);
      const [row] = await pg.query<UserRow & { password_hash: string }>(q.SELECT_USER_BY_EMAIL, [input.email]);
      // The same message and about the same time whether the address is unknown or the password wrong.
      if (!(await verifyPassword(row?.password_hash, input.password))) {
        await throttle.recordFailure(address, input.email, clock.now());
        throw unauthenticated('wrong e-mail or password');
      }
      await throttle.recordSuccess(address, input.email);
      const { password_hash: _hash, ...user } = row;
      return startSession(user);
    },

    logout: (sessionId: string) => pg.query(q.REVOKE_SESSION, [sessionId]).then(() => undefined),

    async me(userId: string) {
      const [row] = await pg.query<UserRow>(q.SELECT_USER, [userId]);
      if (!row) throw unauthenticated();
      return profile(row);
    },
  };
}
