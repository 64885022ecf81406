// The lean transport (http/lean-server.ts) through the real server: the ingest routes answer as on express — the same
// checks in the same order, the same error body — unusual requests and every other path go to express, and the
// ingest routes stay in /openapi.json.
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import pino from 'pino';
import supertest from 'supertest';
import { anotherService, startTestApp, type TestApp } from '../support/app';
import { expectError, UNKNOWN } from '../support/assertions';
import { setUpProject } from '../support/fixtures';

const LIMIT = 4096;

let app: TestApp;
let key: string;
beforeAll(async () => {
  app = await startTestApp({ INGEST_BODY_LIMIT_BYTES: String(LIMIT) });
  ({ key } = await setUpProject(app));
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

describe('ingest routes on the lean transport', () => {
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
      'a text body (express answers)',
      () => app.http.post('/ingest/agent/runs').set(auth()).set('Content-Type', 'text/plain').send('hello'),
      415,
      'unsupported_media_type',
    ],
    [
      'a latin-1 body (express answers)',
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

  it('hands a gzip body to express, which decodes it', async () => {
    await withServer(async (base) => {
      const res = await fetch(`${base}/ingest/agent/runs`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip', ...auth() },
        body: gzipSync(JSON.stringify({ agent_name: 'zipped' })),
      });
      expect(res.status).toBe(201);
    });
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

describe('everything else goes to express', () => {
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

describe('logging on the lean transport', () => {
  /** The service again over the same stores, logging to memory at info. */
  function serviceLoggingTo(lines: Record<string, unknown>[]) {
    const sink = new Writable({
      write: (chunk, _encoding, done) => {
        lines.push(JSON.parse(String(chunk)));
        done();
      },
    });
    const log = pino({ level: 'info' }, sink);
    return anotherService(
      app,
      { ingestLog: { ...app.config.ingestLog!, directory: `${app.config.ingestLog!.directory}-logging` } },
      log,
    ).http;
  }

  it('logs a refused request at warn and a failed one at error with its cause; an accepted one not at info', async () => {
    const lines: Record<string, unknown>[] = [];
    const http = serviceLoggingTo(lines);
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
});
