// The one request path (http/server.ts) through the real server: the ingest routes answer as express answered them —
// the same checks in the same order (but OTLP's media type, checked before its body is read), the same error
// body — compressed bodies are decoded, what no route declares is a 404, the ingest routes stay in /openapi.json,
// and every request is logged by one policy.
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import pino from 'pino';
import supertest from 'supertest';
import { anotherService, startTestApp, type TestApp } from '../support/app';
import { expectError, UNKNOWN } from '../support/assertions';
import { setUpProject } from '../support/fixtures';

const LIMIT = 4096;

let app: TestApp;
let key: string;
let projectId: string;
beforeAll(async () => {
  app = await startTestApp({ INGEST_BODY_LIMIT_BYTES: String(LIMIT) });
  const setUp = await setUpProject(app);
  key = setUp.key;
  projectId = setUp.project.id;
});
afterAll(() => app.close());

const auth = () => ({ Authorization: `Bearer ${key}` });

/** The service on a real port, for requests supertest cannot shape (raw bytes, chunks, one kept-alive socket). */
async function withServer(use: (base: string, port: number) => Promise<void>) {
  const server = http.createServer(app.app).listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  try {
    await use(`http://127.0.0.1:${port}`, port);
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
}
const postJson = (path: string, json: string) =>
  app.http.post(path).set(auth()).set('Content-Type', 'application/json').send(json);

describe('the ingest routes', () => {
  it('answers a start with 201 and echoes the X-Request-Id', async () => {
    const res = await app.http
      .post('/ingest/agent/runs')
      .set(auth())
      .set('X-Request-Id', 'lean-1')
      .send({ agent_name: 'a' });
    expect(res.status).toBe(201);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.headers['x-request-id']).toBe('lean-1');
  });

  it('routes a request target in absolute form (RFC 9112 §3.2.2) by its path', async () => {
    await withServer(async (base, port) => {
      const request = http.request({ host: '127.0.0.1', port, method: 'POST', path: `${base}/ingest/agent/runs?x=1` });
      request.setHeader('Authorization', auth().Authorization);
      request.setHeader('Content-Type', 'application/json');
      request.end(JSON.stringify({ agent_name: 'absolute' }));
      const [response] = (await once(request, 'response')) as [http.IncomingMessage];
      response.resume();
      expect(response.statusCode).toBe(201);
    });
  });

  it('matches paths as express does: a trailing slash, any letter case, a query string', async () => {
    for (const path of ['/ingest/agent/runs/', '/Ingest/Agent/Runs', '/ingest/agent/runs?source=sdk']) {
      expect((await app.http.post(path).set(auth()).send({ agent_name: 'a' })).status).toBe(201);
    }
  });

  it.each([
    ['no key', () => app.http.post('/ingest/agent/runs').send({ agent_name: 'a' }), 401, 'unauthenticated'],
    [
      'a wrong key',
      () =>
        app.http
          .post('/ingest/agent/runs')
          .set({ Authorization: `Bearer rw_${'x'.repeat(40)}` })
          .send({ agent_name: 'a' }),
      401,
      'unauthenticated',
    ],
    ['malformed JSON', () => postJson('/ingest/agent/runs', '{"agent_name":'), 400, 'malformed_json'],
    ['JSON that is not an object or array', () => postJson('/ingest/agent/runs', '"a string"'), 400, 'malformed_json'],
    ['a body of the wrong shape', () => postJson('/ingest/agent/runs', '[]'), 400, 'validation_failed'],
    ['no body at all', () => app.http.post('/ingest/agent/runs').set(auth()), 400, 'validation_failed'],
    ['a run id that is not a UUID', () => postJson('/ingest/agent/runs/not-a-uuid/finish', '{}'), 400, 'invalid_id'],
    [
      'a run id that is not valid percent-encoding',
      () => postJson('/ingest/agent/runs/%E0%A4%A/steps', '{}'),
      400,
      'invalid_id',
    ],
    [
      'an unknown run',
      () =>
        postJson(
          `/ingest/agent/runs/${UNKNOWN}/steps`,
          JSON.stringify({ timestamp: new Date().toISOString(), steps: [] }),
        ),
      404,
      'not_found',
    ],
    [
      'a body over the limit',
      () => postJson('/ingest/agent/runs', JSON.stringify({ agent_name: 'a', input: 'x'.repeat(LIMIT) })),
      413,
      'payload_too_large',
    ],
    [
      'a text body',
      () => app.http.post('/ingest/agent/runs').set(auth()).set('Content-Type', 'text/plain').send('hello'),
      415,
      'unsupported_media_type',
    ],
    [
      'a latin-1 body',
      () =>
        app.http
          .post('/ingest/agent/runs')
          .set(auth())
          .set('Content-Type', 'application/json; charset=latin1')
          .send('{}'),
      415,
      'unsupported_media_type',
    ],
  ])('refuses %s with the contract error body', async (_case, call, status, code) => {
    const res = await (call as () => Promise<supertest.Response>)();
    const error = expectError(res, status as number, code as string);
    expect(error.request_id).toBe(res.headers['x-request-id']);
  });

  it('checks the body before the caller, as express does: malformed JSON without a key is 400, not 401', async () => {
    expectError(
      await app.http.post('/ingest/agent/runs').set('Content-Type', 'application/json').send('{'),
      400,
      'malformed_json',
    );
  });

  it('decodes a gzip body', async () => {
    await withServer(async (base) => {
      const res = await fetch(`${base}/ingest/agent/runs`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip', ...auth() },
        body: gzipSync(JSON.stringify({ agent_name: 'zipped' })),
      });
      expect(res.status).toBe(201);
    });
  });

  it.each([
    ['deflate', deflateSync],
    ['br', brotliCompressSync],
    ['GZIP', gzipSync],
    ['identity', (body: string) => Buffer.from(body)],
  ])('decodes a %s body as well', async (encoding, encode) => {
    await withServer(async (base) => {
      const res = await fetch(`${base}/ingest/agent/runs`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'Content-Encoding': encoding, ...auth() },
        body: encode(JSON.stringify({ agent_name: 'compressed' })),
      });
      expect(res.status).toBe(201);
    });
  });

  it('holds a compressed body to the limit decompressed: 413, and the connection stays usable', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    await withServer(async (_base, port) => {
      const send = async (body: Buffer) => {
        const request = http.request({
          host: '127.0.0.1',
          port,
          agent,
          method: 'POST',
          path: '/ingest/agent/runs',
          headers: { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip', ...auth() },
        });
        request.end(body);
        const [response] = (await once(request, 'response')) as [http.IncomingMessage];
        let text = '';
        for await (const chunk of response) text += chunk;
        return { status: response.statusCode, body: JSON.parse(text), socket: request.socket };
      };
      const bomb = gzipSync(JSON.stringify({ agent_name: 'a', input: 'x'.repeat(100 * LIMIT) }));
      expect(bomb.length).toBeLessThan(LIMIT);
      const refused = await send(bomb);
      expect(refused.status).toBe(413);
      expect(refused.body.error.code).toBe('payload_too_large');
      const accepted = await send(gzipSync(JSON.stringify({ agent_name: 'a' })));
      expect(accepted.status).toBe(201);
      expect(accepted.socket).toBe(refused.socket);
    }).finally(() => agent.destroy());
  });

  it('refuses a Content-Encoding it does not know with 415', async () => {
    const res = await postJson('/ingest/agent/runs', '{"agent_name":"a"}').set('Content-Encoding', 'compress');
    expectError(res, 415, 'unsupported_media_type');
  });

  it('takes JSON in UTF-8 however the charset is spelled, and no other charset', async () => {
    const send = (contentType: string) =>
      app.http.post('/ingest/agent/runs').set(auth()).set('Content-Type', contentType).send('{"agent_name":"a"}');
    expect((await send('application/json; charset="UTF-8"')).status).toBe(201);
    expect((await send('Application/JSON;charset=utf-8')).status).toBe(201);
    expectError(await send('application/json; charset=utf-16le'), 415, 'unsupported_media_type');
  });

  it('answers a gzip body that does not decompress with 400, not 500', async () => {
    await withServer(async (base) => {
      const res = await fetch(`${base}/ingest/agent/runs`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip', ...auth() },
        body: Buffer.concat([
          gzipSync(JSON.stringify({ agent_name: 'zipped' })).subarray(0, 12),
          Buffer.from('not gzip at all'),
        ]),
      });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('malformed_json');
    });
  });

  it('reads off a chunked body over the limit, answers 413, and keeps the connection usable', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    await withServer(async (_base, port) => {
      const send = async (chunks: string[]) => {
        const request = http.request({
          host: '127.0.0.1',
          port,
          agent,
          method: 'POST',
          path: '/ingest/agent/runs',
          headers: { 'Content-Type': 'application/json', ...auth() },
        });
        for (const chunk of chunks) request.write(chunk);
        request.end();
        const [response] = (await once(request, 'response')) as [http.IncomingMessage];
        let text = '';
        for await (const chunk of response) text += chunk;
        return { status: response.statusCode, body: JSON.parse(text), socket: request.socket };
      };
      const body = JSON.stringify({ agent_name: 'a', input: 'x'.repeat(4 * LIMIT) });
      const refused = await send(body.match(/.{1,512}/gs) ?? []);
      expect(refused.status).toBe(413);
      expect(refused.body.error.code).toBe('payload_too_large');
      const accepted = await send([JSON.stringify({ agent_name: 'a' })]);
      expect(accepted.status).toBe(201);
      expect(accepted.socket).toBe(refused.socket);
    }).finally(() => agent.destroy());
  });
});

describe('what is not a declared route', () => {
  it.each([
    ['get', '/ingest/agent/runs'],
    ['post', '/ingest/agent/runs/batch/more'],
    ['post', '/ingest/agent'],
  ] as const)('%s %s → 404 not_found', async (method, path) => {
    expectError(await app.http[method](path).set(auth()), 404, 'not_found');
  });

  it('serves the other routes, e.g. the probes', async () => {
    expect((await app.http.get('/healthz')).body).toEqual({ status: 'ok' });
  });

  it('answers a HEAD request as its GET route, without the body', async () => {
    const runs = await app.http.head(`/projects/${projectId}/agent/runs`).set(auth()).set('X-Request-Id', 'head-1');
    expect([runs.status, runs.headers['x-request-id'], runs.text]).toEqual([200, 'head-1', undefined]);
    expect(runs.headers['x-total-count']).toMatch(/^\d+$/);
    const own = await app.http.head('/healthz').set('X-Request-Id', 'head-2');
    expect([own.status, own.headers['x-request-id'], own.text]).toEqual([200, 'head-2', undefined]);
    expect(own.headers['content-type']).toBe('application/json; charset=utf-8');
  });

  it('gives a 404 and the dashboard their X-Request-Id too', async () => {
    const missing = await app.http.get('/assets/no-such-file.js').set('X-Request-Id', 'asset-1');
    expect(expectError(missing, 404, 'not_found').request_id).toBe('asset-1');
    expect((await app.http.get('/').set('X-Request-Id', 'page-1')).headers['x-request-id']).toBe('page-1');
  });

  it('/openapi.json still lists the ingest routes, from the same declarations', async () => {
    const { body } = await app.http.get('/openapi.json').expect(200);
    for (const path of [
      '/ingest/agent/runs',
      '/ingest/agent/runs/batch',
      '/ingest/agent/runs/{runID}/steps',
      '/ingest/agent/runs/{runID}/finish',
    ]) {
      expect(body.paths[path].post.security).toEqual([{ apiKey: [] }]);
      expect(body.paths[path].post.requestBody).toBeDefined();
    }
  });
});

describe('logging', () => {
  /** The service again over the same stores, logging to memory at info (or the level given). */
  const memorySink = (lines: Record<string, unknown>[]) =>
    new Writable({
      write: (chunk, _encoding, done) => {
        lines.push(JSON.parse(String(chunk)));
        done();
      },
    });

  function serviceLoggingTo(lines: Record<string, unknown>[], level = 'info', name = level) {
    const log = pino({ level }, memorySink(lines));
    return anotherService(
      app,
      { ingestLog: { ...app.config.ingestLog!, directory: `${app.config.ingestLog!.directory}-logging-${name}` } },
      log,
    );
  }

  it('logs a refused request at warn, a failed one at error with its cause; an accepted one not at info', async () => {
    const lines: Record<string, unknown>[] = [];
    const { http } = serviceLoggingTo(lines);
    expect((await http.post('/ingest/agent/runs').set(auth()).send({ agent_name: 'quiet' })).status).toBe(201);
    expect((await http.post('/ingest/agent/runs').set('X-Request-Id', 'no-key').send({ agent_name: 'a' })).status).toBe(
      401,
    );
    expect(lines).toEqual([
      expect.objectContaining({
        level: 40,
        req: { id: 'no-key', method: 'POST', url: '/ingest/agent/runs' },
        res: { statusCode: 401 },
      }),
    ]);

    lines.length = 0;
    // A steps call looks its run up in ClickHouse (a start would only go to the ingest log).
    await app.stores.ch.command('RENAME TABLE live_runs TO live_runs_away');
    try {
      const res = await http
        .post(`/ingest/agent/runs/${randomUUID()}/steps`)
        .set(auth())
        .send({ timestamp: new Date().toISOString(), steps: [] });
      expectError(res, 503, 'unavailable');
      expect(res.headers['retry-after']).toBe('5');
    } finally {
      await app.stores.ch.command('RENAME TABLE live_runs_away TO live_runs');
    }
    expect(lines).toEqual([
      expect.objectContaining({
        level: 50,
        res: { statusCode: 503 },
        err: expect.objectContaining({ message: expect.stringContaining('clickhouse') }),
      }),
    ]);
  });

  it('logs load refused past a limit (a full lane: 503 + Retry-After) at warn, without a stack', async () => {
    const lines: Record<string, unknown>[] = [];
    const log = pino({ level: 'info' }, memorySink(lines));
    const lanes = { read: { concurrency: 1, queue: 0, queueTimeoutMs: 1000 }, ingest: app.config.lanes.ingest };
    const ingestLog = { ...app.config.ingestLog!, directory: `${app.config.ingestLog!.directory}-logging-lanes` };
    const { http } = anotherService(app, { lanes, ingestLog }, log);
    const answers = await Promise.all(
      Array.from({ length: 6 }, () => http.get(`/projects/${projectId}/agent/summary`).set(auth())),
    );
    const refused = answers.filter((res) => res.status === 503);
    expect(refused.length).toBeGreaterThan(0);
    expect(refused.every((res) => res.headers['retry-after'] === '1')).toBe(true);
    const refusals = lines.filter((line) => (line.res as { statusCode: number }).statusCode === 503);
    expect(refusals).toHaveLength(refused.length);
    for (const line of refusals) {
      expect(line).toMatchObject({ level: 40 });
      expect(line).not.toHaveProperty('err');
    }
  });

  it('logs a body cut off by the client as its refusal (400, warn), not as a failure', async () => {
    const lines: Record<string, unknown>[] = [];
    const service = serviceLoggingTo(lines, 'info', 'cut-off');
    const server = http.createServer(service.app).listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const socket = net.connect((server.address() as AddressInfo).port, '127.0.0.1');
      await once(socket, 'connect');
      socket.write(
        'POST /ingest/agent/runs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
          `Authorization: ${auth().Authorization}\r\nContent-Length: 100\r\n\r\n{"agent_name":`,
      );
      await new Promise((resolve) => setTimeout(resolve, 50));
      socket.destroy();
      for (let waited = 0; lines.length === 0 && waited < 100; waited += 1) await new Promise((r) => setTimeout(r, 20));
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
    expect(lines).toEqual([expect.objectContaining({ level: 40, res: { statusCode: 400 } })]);
  });

  it('logs every request in one line by the same policy, a declared route or not', async () => {
    const lines: Record<string, unknown>[] = [];
    const { http } = serviceLoggingTo(lines, 'debug');
    await http.get('/healthz').set('X-Request-Id', 'probe');
    await http.get('/nowhere').set('X-Request-Id', 'nowhere');
    await http.get('/assets/no-such-file.js').set('X-Request-Id', 'asset');
    // What the fallback answers is logged once its response is closed.
    const requestLines = () => lines.filter((line) => line.req !== undefined);
    for (let waited = 0; requestLines().length < 3 && waited < 50; waited += 1) await new Promise(setImmediate);
    expect(requestLines()).toEqual([
      expect.objectContaining({ level: 20, req: { id: 'probe', method: 'GET', url: '/healthz' } }),
      expect.objectContaining({ level: 40, req: { id: 'nowhere', method: 'GET', url: '/nowhere' } }),
      expect.objectContaining({ level: 40, req: { id: 'asset', method: 'GET', url: '/assets/no-such-file.js' } }),
    ]);
  });
});

describe('a client behind a trusted proxy (TRUST_PROXY)', () => {
  const register = (http: supertest.Agent | ReturnType<typeof supertest>) =>
    http
      .post('/auth/register')
      .set('X-Forwarded-Proto', 'https')
      .send({ email: `${randomUUID()}@example.com`, password: 'correct horse battery' });
  const sessionCookie = (res: supertest.Response) =>
    ([] as string[]).concat(res.headers['set-cookie'] ?? []).find((line) => line.startsWith('runwatch_session='));

  it('gets a Secure session cookie when the proxy forwarded HTTPS; not believed without TRUST_PROXY', async () => {
    const proxied = anotherService(app, {
      trustProxy: true,
      ingestLog: { ...app.config.ingestLog!, directory: `${app.config.ingestLog!.directory}-proxied` },
    });
    const behindProxy = await register(proxied.http);
    expect(behindProxy.status).toBe(201);
    expect(sessionCookie(behindProxy)).toMatch(/; Secure(;|$)/);
    const direct = await register(app.http);
    expect(direct.status).toBe(201);
    expect(sessionCookie(direct)).not.toMatch(/Secure/);
  });
});
