// The general body limit (BODY_LIMIT_BYTES) on the foundation's routes: over it → 413 payload_too_large.
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTestApp, type TestApp } from '../support/app';
import { expectError } from '../support/assertions';
import { bearer, registerUser, uniqueEmail } from '../support/fixtures';

const LIMIT = 1024;

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ BODY_LIMIT_BYTES: String(LIMIT) });
});
afterAll(() => app.close());

/** A JSON body of exactly `size` bytes: `{"name":"xxx…"}`. */
const bodyOfSize = (size: number) => JSON.stringify({ name: 'x'.repeat(size - '{"name":""}'.length) });

it('a public route refuses a body over the limit with 413, before looking at it', async () => {
  const res = await app.http
    .post('/auth/register')
    .set('Content-Type', 'application/json')
    .send(JSON.stringify({ email: uniqueEmail(), password: 'p'.repeat(2000) }));
  expect(expectError(res, 413, 'payload_too_large').details).toEqual([]);
});

it('a signed-in route refuses a body one byte over the limit with 413', async () => {
  const { token } = await registerUser(app);
  const res = await app.http
    .post('/admin/orgs')
    .set(bearer(token))
    .set('Content-Type', 'application/json')
    .send(bodyOfSize(LIMIT + 1));
  expect(expectError(res, 413, 'payload_too_large').details).toEqual([]);
});

it('a body of exactly the limit is read and validated (here: the name is too long → 400, not 413)', async () => {
  const { token } = await registerUser(app);
  const res = await app.http
    .post('/admin/orgs')
    .set(bearer(token))
    .set('Content-Type', 'application/json')
    .send(bodyOfSize(LIMIT));
  expect(res.status).toBe(400);
  expect(res.body.error.code).toBe('validation_failed');
  expect(res.body.error.details[0].path).toBe('name');
});

it('a body over the limit streamed without Content-Length (chunked) → 413', async () => {
  const { token } = await registerUser(app);
  const server = http.createServer(app.app).listen(0, '127.0.0.1');
  await once(server, 'listening');
  try {
    const { port } = server.address() as AddressInfo;
    const request = http.request({
      host: '127.0.0.1',
      port,
      method: 'POST',
      path: '/admin/orgs',
      headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${token}` },
    });
    // No Content-Length: node sends the body chunked, so the limit must be enforced while reading.
    const body = bodyOfSize(4 * LIMIT);
    for (let offset = 0; offset < body.length; offset += 512) request.write(body.slice(offset, offset + 512));
    request.end();
    expect(request.getHeader('content-length')).toBeUndefined();
    const [response] = (await once(request, 'response')) as [http.IncomingMessage];
    let text = '';
    for await (const chunk of response) text += chunk;
    expect(response.statusCode).toBe(413);
    const parsed = JSON.parse(text);
    expect(parsed.error.code).toBe('payload_too_large');
    expect(parsed.error.request_id).toBe(response.headers['x-request-id']);
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
});
