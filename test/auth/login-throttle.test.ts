// Login throttling (docs/foundation.md#login-throttling): failed logins per address and per address + e-mail, with
// doubling delays; never a lock on the e-mail alone, so guesses from elsewhere never keep the owner out.
import type { Response } from 'supertest';
import { anotherService, startTestApp, type TestApp } from '../support/app';
import { expectError } from '../support/assertions';
import { uniqueEmail } from '../support/fixtures';

const PER_EMAIL = 3;
const PER_ADDRESS = 6;
const MAX_DELAY = 4;
const PASSWORD = 'correct horse battery';

let app: TestApp;
beforeAll(async () => {
  // TRUST_PROXY lets each test be its own client address (X-Forwarded-For).
  app = await startTestApp({
    LOGIN_FAILURES_PER_EMAIL: String(PER_EMAIL),
    LOGIN_FAILURES_PER_ADDRESS: String(PER_ADDRESS),
    LOGIN_MAX_DELAY_SECONDS: String(MAX_DELAY),
    TRUST_PROXY: 'true',
  });
});
afterAll(() => app.close());

let addressCounter = 0;
/** A client address no other test (of any run: the counters live in Postgres for a day) uses. */
const newClient = () => {
  const n = addressCounter++;
  const random = Math.floor(Math.random() * 65536);
  return { 'X-Forwarded-For': `2001:db8:${random.toString(16)}:${Date.now() % 65536}::${n.toString(16)}` };
};

const login = (client: Record<string, string>, email: string, password: string, on: TestApp = app) =>
  on.http.post('/auth/login').set(client).send({ email, password });

function expectThrottled(res: Response, retryAfter: number) {
  expectError(res, 429, 'rate_limited');
  expect(res.headers['retry-after']).toBe(String(retryAfter));
}

async function registered(): Promise<string> {
  const email = uniqueEmail();
  await app.http.post('/auth/register').set(newClient()).send({ email, password: PASSWORD }).expect(201);
  return email;
}

/** `count` wrong passwords for `email` from `client`, each answered 401. */
async function fail(client: Record<string, string>, email: string, count: number) {
  for (let i = 0; i < count; i += 1) expect((await login(client, email, 'wrong password')).status).toBe(401);
}

describe('guesses from other addresses never keep the owner out', () => {
  it('after many failures for an e-mail from many addresses, its owner logs in from theirs', async () => {
    const email = await registered();
    for (let i = 0; i < 4; i += 1) await fail(newClient(), email, PER_EMAIL);
    expect((await login(newClient(), email, PASSWORD)).status).toBe(200);
  });
});

describe(`per address + e-mail: ${PER_EMAIL} failures, then delays doubling up to ${MAX_DELAY} s`, () => {
  it('makes the next attempt wait, right password or not, and the wait doubles with each failure', async () => {
    const client = newClient();
    const email = await registered();
    await fail(client, email, PER_EMAIL);
    expectThrottled(await login(client, email, PASSWORD), 1);
    app.clock.advance(1);
    await fail(client, email, 1);
    expectThrottled(await login(client, email, PASSWORD), 2);
    app.clock.advance(2);
    await fail(client, email, 1);
    expectThrottled(await login(client, email, 'wrong password'), 4);
    app.clock.advance(4);
    await fail(client, email, 1);
    // Capped at LOGIN_MAX_DELAY_SECONDS.
    expectThrottled(await login(client, email, PASSWORD), MAX_DELAY);
    app.clock.advance(MAX_DELAY);
    expect((await login(client, email, PASSWORD)).status).toBe(200);
  });

  it('leaves the same e-mail from another address and other e-mails from this address alone', async () => {
    const client = newClient();
    const email = await registered();
    await fail(client, email, PER_EMAIL);
    expectThrottled(await login(client, email, PASSWORD), 1);
    expect((await login(newClient(), email, PASSWORD)).status).toBe(200);
    expect((await login(client, await registered(), PASSWORD)).status).toBe(200);
  });

  it('starts the count again after the owner logs in from that address', async () => {
    const client = newClient();
    const email = await registered();
    await fail(client, email, PER_EMAIL - 1);
    expect((await login(client, email, PASSWORD)).status).toBe(200);
    await fail(client, email, PER_EMAIL - 1);
    expect((await login(client, email, PASSWORD)).status).toBe(200);
  });

  it('counts per normalized e-mail: other case and whitespace are the same e-mail', async () => {
    const client = newClient();
    const email = await registered();
    await fail(client, email.toUpperCase(), 1);
    await fail(client, ` ${email} `, PER_EMAIL - 1);
    expect((await login(client, email, PASSWORD)).status).toBe(429);
  });

  it('does not end the existing sessions of the e-mail', async () => {
    const client = newClient();
    const email = uniqueEmail();
    const { token } = (await app.http.post('/auth/register').set(client).send({ email, password: PASSWORD })).body;
    await fail(client, email, PER_EMAIL);
    await app.http.get('/auth/me').set('Authorization', `Bearer ${token}`).expect(200);
  });
});

describe(`per address: ${PER_ADDRESS} failures over any e-mails, then delays`, () => {
  it('makes the address wait whatever the e-mail, unknown ones included; other addresses are not', async () => {
    const client = newClient();
    for (let i = 0; i < PER_ADDRESS; i += 1) await fail(client, uniqueEmail('ghost'), 1);
    const email = await registered();
    expectThrottled(await login(client, email, PASSWORD), 1);
    expect((await login(newClient(), email, PASSWORD)).status).toBe(200);
    app.clock.advance(1);
    expect((await login(client, email, PASSWORD)).status).toBe(200);
  });
});

describe('several instances on one Postgres', () => {
  it('another instance throttles the failures this one counted', async () => {
    const client = newClient();
    const email = await registered();
    await fail(client, email, PER_EMAIL);
    const other = anotherService(app, {});
    expectThrottled(await login(client, email, PASSWORD, other), 1);
  });
});
