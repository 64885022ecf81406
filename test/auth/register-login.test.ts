// POST /auth/register and POST /auth/login (contract section 2), through the real server and stores.
import { randomUUID } from 'node:crypto';
import type { Response } from 'supertest';
import { startTestApp, type TestApp } from '../support/app';
import { detailPaths, expectError, TIMESTAMP, UUID } from '../support/assertions';
import { bearer, registerUser, uniqueEmail } from '../support/fixtures';

let app: TestApp;
// The service's default rate limit (an empty value counts as unset), which the last describe checks.
beforeAll(async () => {
  app = await startTestApp({ AUTH_RATE_LIMIT_PER_MINUTE: '' });
});
afterAll(() => app.close());
// This file calls register/login more often than AUTH_RATE_LIMIT_PER_MINUTE allows in one minute (the limit has
// its own tests); the service's clock stands still, so each test moves it on to a fresh rate-limit minute.
beforeEach(() => app.clock.advance(60));

const PASSWORD = 'correct horse battery';

/** The session cookie of a response, parsed: its value and its attributes (lower-cased names). */
function sessionCookie(res: Response) {
  const header = ([] as string[])
    .concat(res.headers['set-cookie'] ?? [])
    .find((cookie) => cookie.startsWith('runwatch_session='));
  if (!header) return undefined;
  const [pair, ...attributes] = header.split(';').map((part) => part.trim());
  return {
    value: decodeURIComponent(pair.slice('runwatch_session='.length)),
    attributes: Object.fromEntries(
      attributes.map((attribute) => {
        const [name, ...rest] = attribute.split('=');
        return [name.toLowerCase(), rest.join('=') || true];
      }),
    ) as Record<string, string | true>,
  };
}

describe('POST /auth/register', () => {
  it('→ 201 Auth result: the user, their first organization, a session token and its expiry', async () => {
    const email = uniqueEmail('ada');
    const res = await app.http
      .post('/auth/register')
      .send({ email, password: PASSWORD, name: 'Ada Lovelace' })
      .expect(201);
    expect(Object.keys(res.body).sort()).toEqual(['expires_at', 'organizations', 'token', 'user']);
    expect(res.body.user).toEqual({
      id: expect.stringMatching(UUID),
      email,
      name: 'Ada Lovelace',
      is_verified: false,
      verified_at: null,
      created_at: expect.stringMatching(TIMESTAMP),
    });
    expect(res.body.organizations).toEqual([
      {
        id: expect.stringMatching(UUID),
        name: "Ada Lovelace's organization",
        created_at: expect.stringMatching(TIMESTAMP),
      },
    ]);
    // An HS256 JWT, valid for SESSION_TTL_SECONDS (12 h by default) from the service's now.
    expect(res.body.token.split('.')).toHaveLength(3);
    expect(JSON.parse(Buffer.from(res.body.token.split('.')[0], 'base64url').toString())).toMatchObject({
      alg: 'HS256',
      typ: 'JWT',
    });
    expect(res.body.expires_at).toMatch(TIMESTAMP);
    expect(new Date(res.body.expires_at).getTime()).toBe(app.clock.now().getTime() + 12 * 3600 * 1000);
  });

  it('makes the user admin of the new organization', async () => {
    const { token, user, org } = await registerUser(app);
    const members = await app.http.get(`/admin/orgs/${org.id}/members`).set(bearer(token)).expect(200);
    expect(members.body).toEqual([
      {
        user_id: user.id,
        email: user.email,
        name: user.name,
        role: 'admin',
        created_at: expect.stringMatching(TIMESTAMP),
      },
    ]);
  });

  it('sets the token as an HttpOnly, SameSite=Lax cookie runwatch_session (not Secure over plain HTTP)', async () => {
    const res = await app.http.post('/auth/register').send({ email: uniqueEmail(), password: PASSWORD }).expect(201);
    const cookie = sessionCookie(res);
    expect(cookie?.value).toBe(res.body.token);
    expect(cookie?.attributes.httponly).toBe(true);
    expect(cookie?.attributes.samesite).toBe('Lax');
    expect(cookie?.attributes.path).toBe('/');
    expect(cookie?.attributes.secure).toBeUndefined();
    expect(new Date(String(cookie?.attributes.expires)).getTime()).toBe(
      Math.floor(new Date(res.body.expires_at).getTime() / 1000) * 1000,
    );
  });

  it('trims and lower-cases the e-mail, and names the user after its local part when no name is sent', async () => {
    const local = `Grace.Hopper-${randomUUID().slice(0, 8)}`;
    const res = await app.http
      .post('/auth/register')
      .send({ email: `  ${local}@Example.COM `, password: PASSWORD })
      .expect(201);
    expect(res.body.user.email).toBe(`${local.toLowerCase()}@example.com`);
    expect(res.body.user.name).toBe(local.toLowerCase());
    expect(res.body.organizations[0].name).toBe(`${local.toLowerCase()}'s organization`);
  });

  it('trims the name', async () => {
    const res = await app.http
      .post('/auth/register')
      .send({ email: uniqueEmail(), password: PASSWORD, name: '  Alan  ' })
      .expect(201);
    expect(res.body.user.name).toBe('Alan');
  });

  it('stores the password only as an argon2id hash', async () => {
    const email = uniqueEmail();
    await app.http.post('/auth/register').send({ email, password: PASSWORD }).expect(201);
    const [row] = await app.stores.pg.query<Record<string, unknown>>('SELECT * FROM users WHERE email = $1', [email]);
    expect(row.password_hash).toMatch(/^\$argon2id\$v=19\$/);
    expect(JSON.stringify(row)).not.toContain(PASSWORD);
  });

  it('accepts passwords of 8 and of 256 characters, of any composition', async () => {
    await app.http.post('/auth/register').send({ email: uniqueEmail(), password: 'q7;vmkd0' }).expect(201);
    await app.http
      .post('/auth/register')
      .send({ email: uniqueEmail(), password: 'üö'.repeat(128) })
      .expect(201);
  });

  describe('a common, breached or guessable password → 400 validation_failed on password (NIST SP 800-63B)', () => {
    const local = `grace-${randomUUID().slice(0, 8)}`;
    const email = `${local}@example.com`;
    it.each([
      ['a common password', 'password', /commonly used/],
      ['a common one in other case', 'PassWord', /commonly used/],
      ['digits in order', '12345678', /commonly used/],
      ['a keyboard walk', 'qwertyuiop', /commonly used/],
      ['a breached one', 'iloveyou', /commonly used/],
      ['the service name', 'runwatch', /commonly used/],
      ['eight spaces', '        ', /one character repeated/],
      ['one character repeated', 'zzzzzzzzzz', /one character repeated/],
      ['the e-mail itself', email, /e-mail address or name/],
      ['the e-mail in other case', email.toUpperCase(), /e-mail address or name/],
      ["the e-mail's local part", local, /e-mail address or name/],
    ])('%s', async (_label, password, message) => {
      const res = await app.http.post('/auth/register').send({ email, password });
      expectError(res, 400, 'validation_failed');
      expect(res.body.error.details).toEqual([{ path: 'password', message: expect.stringMatching(message) }]);
      expect(res.body.error.message).toMatch(/^password: /);
    });

    it('the name sent with it', async () => {
      const res = await app.http
        .post('/auth/register')
        .send({ email: uniqueEmail(), password: 'Margaret Hamilton', name: 'Margaret Hamilton' });
      expectError(res, 400, 'validation_failed');
      expect(detailPaths(res)).toEqual(['password']);
    });

    it('registers nobody, and a good password then registers the address', async () => {
      await app.http.post('/auth/register').send({ email, password: 'password' }).expect(400);
      await app.http.post('/auth/login').send({ email, password: 'password' }).expect(401);
      await app.http.post('/auth/register').send({ email, password: PASSWORD }).expect(201);
    });
  });

  describe('duplicate e-mail → 409 conflict', () => {
    it('the same address again', async () => {
      const email = uniqueEmail();
      await app.http.post('/auth/register').send({ email, password: PASSWORD }).expect(201);
      expectError(await app.http.post('/auth/register').send({ email, password: 'another password' }), 409, 'conflict');
    });

    it('the same address in other case and with whitespace', async () => {
      const email = uniqueEmail('case');
      await app.http.post('/auth/register').send({ email, password: PASSWORD }).expect(201);
      const res = await app.http
        .post('/auth/register')
        .send({ email: `\t${email.toUpperCase()}  `, password: PASSWORD });
      expectError(res, 409, 'conflict');
    });

    it('leaves nothing behind: no second user, no organization for the refused registration', async () => {
      const email = uniqueEmail();
      const refusedName = `refused-${randomUUID()}`;
      await app.http.post('/auth/register').send({ email, password: PASSWORD }).expect(201);
      await app.http.post('/auth/register').send({ email, password: PASSWORD, name: refusedName }).expect(409);
      expect(await app.stores.pg.query('SELECT id FROM users WHERE email = $1', [email])).toHaveLength(1);
      expect(
        await app.stores.pg.query('SELECT id FROM organizations WHERE name = $1', [`${refusedName}'s organization`]),
      ).toEqual([]);
    });
  });

  describe('bad input → 400 validation_failed naming the field', () => {
    it.each([
      ['no e-mail', { password: PASSWORD }, ['email']],
      ['no password', { email: 'x@example.com' }, ['password']],
      ['an empty body', {}, ['email', 'password']],
      ['an invalid e-mail', { email: 'not-an-address', password: PASSWORD }, ['email']],
      [
        'an e-mail over 254 characters',
        { email: `${'a'.repeat(64)}@${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(63)}.com`, password: PASSWORD },
        ['email'],
      ],
      ['an e-mail that is a number', { email: 42, password: PASSWORD }, ['email']],
      ['a password of 7 characters', { email: 'x@example.com', password: '1234567' }, ['password']],
      ['a password of 257 characters', { email: 'x@example.com', password: 'p'.repeat(257) }, ['password']],
      ['an empty name', { email: 'x@example.com', password: PASSWORD, name: '' }, ['name']],
      ['a blank name', { email: 'x@example.com', password: PASSWORD, name: '   ' }, ['name']],
      ['a name of 101 characters', { email: 'x@example.com', password: PASSWORD, name: 'n'.repeat(101) }, ['name']],
      ['a null name', { email: 'x@example.com', password: PASSWORD, name: null }, ['name']],
      ['an unknown field', { email: 'x@example.com', password: PASSWORD, is_admin: true }, ['is_admin']],
    ])('%s', async (_label, body, paths) => {
      const res = await app.http.post('/auth/register').send(body);
      expectError(res, 400, 'validation_failed');
      expect(detailPaths(res)).toEqual(paths);
    });

    it('a body that is an array', async () => {
      expectError(
        await app.http.post('/auth/register').send([{ email: 'x@example.com', password: PASSWORD }]),
        400,
        'validation_failed',
      );
    });
  });

  it('malformed JSON → 400 malformed_json; a form body → 415', async () => {
    expectError(
      await app.http.post('/auth/register').set('Content-Type', 'application/json').send('{"email":'),
      400,
      'malformed_json',
    );
    expectError(
      await app.http.post('/auth/register').type('form').send({ email: 'x@example.com', password: PASSWORD }),
      415,
      'unsupported_media_type',
    );
  });
});

describe('POST /auth/login', () => {
  let email: string;
  let registered: Awaited<ReturnType<typeof registerUser>>;
  beforeAll(async () => {
    email = uniqueEmail('login');
    registered = await registerUser(app, { email, name: 'Login User' });
  });

  it('→ 200 Auth result with a new session', async () => {
    const res = await app.http.post('/auth/login').send({ email, password: PASSWORD }).expect(200);
    expect(Object.keys(res.body).sort()).toEqual(['expires_at', 'organizations', 'token', 'user']);
    expect(res.body.user).toEqual(registered.user);
    expect(res.body.organizations).toEqual([registered.org]);
    expect(res.body.token).not.toBe(registered.token);
    expect(new Date(res.body.expires_at).getTime()).toBe(app.clock.now().getTime() + 12 * 3600 * 1000);
    await app.http.get('/auth/me').set(bearer(res.body.token)).expect(200);
    // Logging in again does not end the earlier session.
    await app.http.get('/auth/me').set(bearer(registered.token)).expect(200);
  });

  it('sets the session cookie too', async () => {
    const res = await app.http.post('/auth/login').send({ email, password: PASSWORD }).expect(200);
    const cookie = sessionCookie(res);
    expect(cookie?.value).toBe(res.body.token);
    expect(cookie?.attributes).toMatchObject({ httponly: true, samesite: 'Lax', path: '/' });
  });

  it('normalizes the e-mail as at registration', async () => {
    await app.http
      .post('/auth/login')
      .send({ email: `  ${email.toUpperCase()} `, password: PASSWORD })
      .expect(200);
  });

  it('lists every organization of the user, ordered by created_at then id', async () => {
    const created = [];
    for (const name of ['Zeta', 'Alpha'])
      created.push((await app.http.post('/admin/orgs').set(bearer(registered.token)).send({ name }).expect(201)).body);
    const res = await app.http.post('/auth/login').send({ email, password: PASSWORD }).expect(200);
    expect(res.body.organizations).toEqual([registered.org, ...created]);
  });

  it('wrong password and unknown e-mail → the same 401, with the same message', async () => {
    const wrongPassword = await app.http.post('/auth/login').send({ email, password: 'not the password' });
    const unknownEmail = await app.http.post('/auth/login').send({ email: uniqueEmail('nobody'), password: PASSWORD });
    const first = expectError(wrongPassword, 401, 'unauthenticated');
    const second = expectError(unknownEmail, 401, 'unauthenticated');
    expect({ ...first, request_id: undefined }).toEqual({ ...second, request_id: undefined });
    expect(first.message).toBe('wrong e-mail or password');
    expect(first.details).toEqual([]);
    expect(wrongPassword.headers['set-cookie']).toBeUndefined();
  });

  it('an unknown e-mail takes about as long as a wrong password (a dummy hash is verified)', async () => {
    const timed = async (attempt: () => Promise<unknown>) => {
      const started = process.hrtime.bigint();
      await attempt();
      return Number(process.hrtime.bigint() - started) / 1e6;
    };
    const median = (times: number[]) => times.sort((a, b) => a - b)[Math.floor(times.length / 2)];
    // Taken in turns, so that a burst of load from the other test worker slows both kinds alike.
    const wrongPasswordTimes: number[] = [];
    const unknownEmailTimes: number[] = [];
    for (let i = 0; i < 7; i += 1) {
      wrongPasswordTimes.push(
        await timed(() => app.http.post('/auth/login').send({ email, password: 'not the password' }).expect(401)),
      );
      unknownEmailTimes.push(
        await timed(() =>
          app.http
            .post('/auth/login')
            .send({ email: uniqueEmail('nobody'), password: PASSWORD })
            .expect(401),
        ),
      );
    }
    const [wrongPassword, unknownEmail] = [median(wrongPasswordTimes), median(unknownEmailTimes)];
    // Without the dummy hash an unknown e-mail would answer in a fraction of a millisecond of work, not tens.
    expect(unknownEmail).toBeGreaterThan(wrongPassword * 0.4);
  });

  it('a password that is a prefix or differs only in case → 401', async () => {
    expectError(
      await app.http.post('/auth/login').send({ email, password: PASSWORD.slice(0, -1) }),
      401,
      'unauthenticated',
    );
    expectError(
      await app.http.post('/auth/login').send({ email, password: PASSWORD.toUpperCase() }),
      401,
      'unauthenticated',
    );
  });

  it.each([
    ['no password', { email: 'x@example.com' }, ['password']],
    ['no e-mail', { password: PASSWORD }, ['email']],
    ['an invalid e-mail', { email: 'nope', password: PASSWORD }, ['email']],
    ['an unknown field', { email: 'x@example.com', password: PASSWORD, remember: true }, ['remember']],
    ['a password over 256 characters', { email: 'x@example.com', password: 'p'.repeat(257) }, ['password']],
  ])('%s → 400 validation_failed', async (_label, body, paths) => {
    const res = await app.http.post('/auth/login').send(body);
    expectError(res, 400, 'validation_failed');
    expect(detailPaths(res)).toEqual(paths);
  });

  it('malformed JSON → 400 malformed_json; text → 415', async () => {
    expectError(
      await app.http.post('/auth/login').set('Content-Type', 'application/json').send('{'),
      400,
      'malformed_json',
    );
    expectError(
      await app.http.post('/auth/login').set('Content-Type', 'text/plain').send(`${email} ${PASSWORD}`),
      415,
      'unsupported_media_type',
    );
  });
});

describe('rate limit at the default settings (30 per minute per client address)', () => {
  it('the 31st register/login call of a minute → 429; X-Forwarded-For is ignored without TRUST_PROXY', async () => {
    for (let i = 0; i < 30; i += 1) {
      await app.http
        .post(i % 2 ? '/auth/login' : '/auth/register')
        .set('X-Forwarded-For', `10.0.0.${i + 1}`)
        .send({})
        .expect(400);
    }
    const res = await app.http
      .post('/auth/login')
      .set('X-Forwarded-For', '10.0.0.99')
      .send({ email: uniqueEmail(), password: PASSWORD });
    expectError(res, 429, 'rate_limited');
    expect(res.headers['retry-after']).toBe('60');
  });
});
