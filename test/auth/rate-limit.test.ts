// Rate limits of register/login (contract section 2) with small limits: per client address. Failed logins are
// throttled apart (login-throttle.test.ts).
import type { Response } from 'supertest';
import { startTestApp, type TestApp } from '../support/app';
import { expectError } from '../support/assertions';
import { uniqueEmail } from '../support/fixtures';

const PER_MINUTE = 3;
const PASSWORD = 'correct horse battery';

let app: TestApp;
beforeAll(async () => {
  // TRUST_PROXY lets each test be its own client address (X-Forwarded-For), so the tests do not share a budget.
  app = await startTestApp({
    AUTH_RATE_LIMIT_PER_MINUTE: String(PER_MINUTE),
    TRUST_PROXY: 'true',
  });
});
afterAll(() => app.close());

let addressCounter = 0;
/** A client address no other test uses. */
const newClient = () => ({
  'X-Forwarded-For': `10.1.${Math.floor(addressCounter / 250)}.${(addressCounter++ % 250) + 1}`,
});

function expectRateLimited(res: Response, retryAfter: number) {
  expectError(res, 429, 'rate_limited');
  expect(res.headers['retry-after']).toBe(String(retryAfter));
}

/** Registers a user from its own client address, so that the registration uses no test's budget. */
const registerQuietly = (email = uniqueEmail()) =>
  app.http
    .post('/auth/register')
    .set(newClient())
    .send({ email, password: PASSWORD })
    .expect(201)
    .then((res) => res.body);

describe(`register and login: ${PER_MINUTE} per minute per client address`, () => {
  it('the 4th call in a minute → 429 with Retry-After; register and login share the budget', async () => {
    const client = newClient();
    const email = uniqueEmail();
    await app.http.post('/auth/register').set(client).send({ email, password: PASSWORD }).expect(201);
    await app.http.post('/auth/login').set(client).send({ email, password: PASSWORD }).expect(200);
    await app.http.post('/auth/login').set(client).send({ email, password: PASSWORD }).expect(200);
    expectRateLimited(await app.http.post('/auth/login').set(client).send({ email, password: PASSWORD }), 60);
    expectRateLimited(
      await app.http.post('/auth/register').set(client).send({ email: uniqueEmail(), password: PASSWORD }),
      60,
    );
  });

  it('Retry-After counts down with time, and the next minute the client may call again', async () => {
    const client = newClient();
    const { user } = await registerQuietly();
    for (let i = 0; i < PER_MINUTE; i += 1)
      await app.http.post('/auth/login').set(client).send({ email: user.email, password: PASSWORD }).expect(200);
    app.clock.advance(45);
    expectRateLimited(
      await app.http.post('/auth/login').set(client).send({ email: user.email, password: PASSWORD }),
      15,
    );
    app.clock.advance(14);
    expectRateLimited(
      await app.http.post('/auth/login').set(client).send({ email: user.email, password: PASSWORD }),
      1,
    );
    app.clock.advance(1);
    await app.http.post('/auth/login').set(client).send({ email: user.email, password: PASSWORD }).expect(200);
  });

  it('counts refused and invalid calls too (the limit is checked before anything else)', async () => {
    const client = newClient();
    await app.http.post('/auth/login').set(client).send({ email: 'not-an-address' }).expect(400);
    await app.http.post('/auth/login').set(client).set('Content-Type', 'application/json').send('{').expect(400);
    await app.http.post('/auth/register').set(client).send({}).expect(400);
    expectRateLimited(
      await app.http.post('/auth/register').set(client).send({ email: uniqueEmail(), password: PASSWORD }),
      60,
    );
  });

  it('other client addresses are not limited by one client using up its budget', async () => {
    const busy = newClient();
    for (let i = 0; i < PER_MINUTE; i += 1) await app.http.post('/auth/login').set(busy).send({}).expect(400);
    expectRateLimited(await app.http.post('/auth/login').set(busy).send({}), 60);
    await app.http
      .post('/auth/register')
      .set(newClient())
      .send({ email: uniqueEmail(), password: PASSWORD })
      .expect(201);
  });

  it('does not limit the other routes', async () => {
    const client = newClient();
    const { token } = await app.http
      .post('/auth/register')
      .set(client)
      .send({ email: uniqueEmail(), password: PASSWORD })
      .expect(201)
      .then((res) => res.body);
    for (let i = 0; i < PER_MINUTE + 2; i += 1)
      await app.http.get('/auth/me').set(client).set('Authorization', `Bearer ${token}`).expect(200);
  });
});
