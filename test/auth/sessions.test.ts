// Sessions (contract section 2): GET /auth/me, POST /auth/logout, Bearer and cookie, expiry, revocation, tampering.
import jwt from 'jsonwebtoken';
import type { Response } from 'supertest';
import { startTestApp, type TestApp } from '../support/app';
import { expectError } from '../support/assertions';
import { bearer, registerUser, uniqueEmail } from '../support/fixtures';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.close());
// This file registers more users than AUTH_RATE_LIMIT_PER_MINUTE allows in one minute (the limit has its own
// tests); the service's clock stands still, so each test moves it on to a fresh rate-limit minute.
beforeEach(() => app.clock.advance(60));

const SESSION_TTL_SECONDS = 12 * 3600;

function expectUnauthenticated(res: Response) {
  expect(expectError(res, 401, 'unauthenticated').details).toEqual([]);
  expect(res.body).not.toHaveProperty('user');
}

const me = (headers: Record<string, string> = {}) => app.http.get('/auth/me').set(headers);
const cookie = (token: string) => ({ Cookie: `runwatch_session=${token}` });

/** The runwatch_session Set-Cookie line of a response, if any. */
const setCookieOf = (res: Response) =>
  ([] as string[]).concat(res.headers['set-cookie'] ?? []).find((line) => line.startsWith('runwatch_session='));

describe('GET /auth/me', () => {
  it('→ 200 the user and their organizations, without token or expiry', async () => {
    const { token, user, org } = await registerUser(app, { name: 'Me Myself' });
    const res = await me(bearer(token)).expect(200);
    expect(res.body).toEqual({ user, organizations: [org] });
  });

  it('lists the organizations the user joined later too, ordered by created_at then id', async () => {
    const owner = await registerUser(app);
    const joiner = await registerUser(app);
    await app.http
      .post(`/admin/orgs/${owner.org.id}/members`)
      .set(bearer(owner.token))
      .send({ email: joiner.user.email, role: 'viewer' })
      .expect(201);
    const res = await me(bearer(joiner.token)).expect(200);
    // The owner's organization was created first, so it comes first although the joiner was added to it later.
    expect(res.body.organizations).toEqual([owner.org, joiner.org]);
  });

  it('no credentials → 401', async () => {
    expectUnauthenticated(await me());
  });

  it.each([
    ['a token that is not a JWT', 'Bearer not-a-jwt'],
    ['an empty Bearer', 'Bearer '],
    ['another scheme', 'Basic dXNlcjpwYXNz'],
    ['an API key in place of a session', `Bearer rw_${'a'.repeat(40)}`],
  ])('%s → 401', async (_label, authorization) => {
    expectUnauthenticated(await me({ Authorization: authorization }));
  });

  it('accepts the scheme name in any case', async () => {
    const { token } = await registerUser(app);
    await me({ Authorization: `bearer ${token}` }).expect(200);
  });
});

describe('cookie authentication', () => {
  it('the runwatch_session cookie from the register response authenticates', async () => {
    const res = await app.http
      .post('/auth/register')
      .send({ email: uniqueEmail('cookie'), password: 'correct horse battery' })
      .expect(201);
    const line = setCookieOf(res)!;
    expect(line).toMatch(/; HttpOnly/);
    expect(line).toMatch(/; SameSite=Lax/);
    // Send back exactly what a browser would: the name=value pair.
    const pair = line.split(';')[0];
    const profile = await app.http.get('/auth/me').set('Cookie', pair).expect(200);
    expect(profile.body.user.id).toBe(res.body.user.id);
  });

  it('works among other cookies, and on admin routes', async () => {
    const { token, org } = await registerUser(app);
    await app.http
      .get(`/admin/orgs/${org.id}`)
      .set('Cookie', `theme=dark; runwatch_session=${token}; other=1`)
      .expect(200);
    await app.http.post('/admin/orgs').set(cookie(token)).send({ name: 'via cookie' }).expect(201);
  });

  it('a tampered cookie → 401', async () => {
    const { token } = await registerUser(app);
    expectUnauthenticated(await me(cookie(`${token}x`)));
  });

  it('a cookie of another name → 401', async () => {
    const { token } = await registerUser(app);
    expectUnauthenticated(await me({ Cookie: `session=${token}` }));
  });
});

describe('POST /auth/logout', () => {
  it('→ 204, revokes that session at once and clears the cookie', async () => {
    const { token } = await registerUser(app);
    await me(bearer(token)).expect(200);
    const res = await app.http.post('/auth/logout').set(bearer(token)).expect(204);
    expect(res.text).toBe('');
    const cleared = setCookieOf(res);
    expect(cleared).toMatch(/^runwatch_session=;/);
    expect(cleared).toMatch(/Expires=Thu, 01 Jan 1970 00:00:00 GMT/);
    // The token is still a well-signed, unexpired JWT; the service refuses it because the session is revoked.
    expectUnauthenticated(await me(bearer(token)));
    expectUnauthenticated(await me(cookie(token)));
    expectUnauthenticated(await app.http.post('/auth/logout').set(bearer(token)));
  });

  it('ends only that session: another session of the same user keeps working', async () => {
    const { token, user, password } = await registerUser(app);
    const second = await app.http.post('/auth/login').send({ email: user.email, password }).expect(200);
    await app.http.post('/auth/logout').set(bearer(second.body.token)).expect(204);
    await me(bearer(token)).expect(200);
    expectUnauthenticated(await me(bearer(second.body.token)));
  });

  it('works with the cookie', async () => {
    const { token } = await registerUser(app);
    await app.http.post('/auth/logout').set(cookie(token)).expect(204);
    expectUnauthenticated(await me(cookie(token)));
  });

  it('records the revocation in Postgres', async () => {
    const { token } = await registerUser(app);
    const { jti } = jwt.decode(token) as { jti: string };
    await app.http.post('/auth/logout').set(bearer(token)).expect(204);
    const [session] = await app.stores.pg.query<{ revoked_at: Date | null }>(
      'SELECT revoked_at FROM sessions WHERE id = $1',
      [jti],
    );
    expect(session.revoked_at).toBeInstanceOf(Date);
  });

  it('without a session → 401', async () => {
    expectUnauthenticated(await app.http.post('/auth/logout'));
  });

  it('a body is not expected, but an empty JSON object is harmless', async () => {
    const { token } = await registerUser(app);
    await app.http.post('/auth/logout').set(bearer(token)).send({}).expect(204);
  });
});

describe('expiry', () => {
  it('a session works until SESSION_TTL_SECONDS after it was issued, then → 401', async () => {
    const { token } = await registerUser(app);
    app.clock.advance(SESSION_TTL_SECONDS - 1);
    await me(bearer(token)).expect(200);
    app.clock.advance(1);
    expectUnauthenticated(await me(bearer(token)));
    expectUnauthenticated(await me(cookie(token)));
  });

  it('an expired session cannot log out either; logging in again gives a fresh one', async () => {
    const { token, user, password } = await registerUser(app);
    app.clock.advance(SESSION_TTL_SECONDS + 1);
    expectUnauthenticated(await app.http.post('/auth/logout').set(bearer(token)));
    const again = await app.http.post('/auth/login').send({ email: user.email, password }).expect(200);
    await me(bearer(again.body.token)).expect(200);
  });

  it('the token carries the expiry the response announced', async () => {
    const res = await app.http
      .post('/auth/register')
      .send({ email: uniqueEmail('exp'), password: 'correct horse battery' })
      .expect(201);
    const claims = jwt.decode(res.body.token) as { exp: number; sub: string; jti: string };
    expect(claims.exp).toBe(Math.floor(new Date(res.body.expires_at).getTime() / 1000));
    expect(claims.exp).toBe(Math.floor(app.clock.now().getTime() / 1000) + SESSION_TTL_SECONDS);
    expect(claims.sub).toBe(res.body.user.id);
    expect(claims.jti).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe('tampered and foreign tokens → 401', () => {
  let token: string;
  let claims: { sub: string; jti: string; exp: number };
  beforeAll(async () => {
    ({ token } = await registerUser(app));
    claims = jwt.decode(token) as typeof claims;
  });

  /** Replaces one character in the middle of a token part by another of the base64url alphabet. */
  function flipCharacter(part: string): string {
    const at = Math.floor(part.length / 2);
    return part.slice(0, at) + (part[at] === 'A' ? 'B' : 'A') + part.slice(at + 1);
  }

  it('the untouched token works (control)', async () => {
    await me(bearer(token)).expect(200);
  });

  it('one character of the signature flipped', async () => {
    const [header, payload, signature] = token.split('.');
    expectUnauthenticated(await me(bearer(`${header}.${payload}.${flipCharacter(signature)}`)));
  });

  it('the payload changed (another user) with the original signature', async () => {
    const other = await registerUser(app);
    const [header, , signature] = token.split('.');
    const payload = Buffer.from(JSON.stringify({ ...claims, sub: other.user.id })).toString('base64url');
    expectUnauthenticated(await me(bearer(`${header}.${payload}.${signature}`)));
  });

  it('the same claims signed with another secret', async () => {
    const forged = jwt.sign(claims, 'some-other-secret-that-is-also-32-characters-or-more', {
      algorithm: 'HS256',
      noTimestamp: true,
    });
    expectUnauthenticated(await me(bearer(forged)));
  });

  it('the same claims, unsigned (alg none)', async () => {
    const unsigned = jwt.sign(claims, '', { algorithm: 'none', noTimestamp: true } as jwt.SignOptions);
    expectUnauthenticated(await me(bearer(unsigned)));
  });

  it('a well-signed token whose session (jti) was never issued', async () => {
    const forged = jwt.sign({ ...claims, jti: '0190b3a5-6c4e-7d3f-8a1b-2c3d4e5f6a7b' }, app.config.jwtSecret!, {
      algorithm: 'HS256',
      noTimestamp: true,
    });
    expectUnauthenticated(await me(bearer(forged)));
  });

  it('a well-signed token naming another user than its session belongs to', async () => {
    const other = await registerUser(app);
    const forged = jwt.sign({ ...claims, sub: other.user.id }, app.config.jwtSecret!, {
      algorithm: 'HS256',
      noTimestamp: true,
    });
    expectUnauthenticated(await me(bearer(forged)));
  });

  it('a well-signed token with its expiry pushed past the session row', async () => {
    const extended = jwt.sign({ ...claims, exp: claims.exp + 365 * 86400 }, app.config.jwtSecret!, {
      algorithm: 'HS256',
      noTimestamp: true,
    });
    await me(bearer(extended)).expect(200); // the session row is still live
    app.clock.advance(SESSION_TTL_SECONDS + 60);
    expectUnauthenticated(await me(bearer(extended))); // the row's expiry decides, not the claim
  });
});
