// Bad input of every kind gets a clear 400 (or the 401 a broken session deserves), never a 500 or a 503 (contract
// §1): lone UTF-16 surrogates anywhere, NUL characters in what Postgres stores, times and amounts the store cannot
// hold or sum, paging past exact integers, query integers that are not decimal, values the store refuses, and bytes
// that are not UTF-8.
import { randomUUID } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { startTestApp, type TestApp } from '../support/app';
import { expectError, expectFieldError } from '../support/assertions';
import { bearer, setUpProject, uniqueEmail } from '../support/fixtures';

let app: TestApp;
let p: Awaited<ReturnType<typeof setUpProject>>;
beforeAll(async () => {
  app = await startTestApp();
  p = await setUpProject(app);
});
afterAll(() => app.close());

const LONE = 'x\ud800';
const NUL = 'x\u0000y';
const rules = () => `/admin/orgs/${p.org.id}/projects/${p.project.id}/alert-rules`;
const rule = (fields: Record<string, unknown> = {}) => ({
  name: 'completion',
  class: 'aggregate',
  signal: 'completion_rate',
  severity: 'warning',
  channel: 'webhook',
  channel_config: { url: 'https://hooks.example.com/runwatch' },
  ...fields,
});
const asAdmin = (method: 'post' | 'patch', path: string, body: object) =>
  app.http[method](path).set(bearer(p.admin.token)).send(body);
const withKey = (path: string, body: object) => app.http.post(path).set(bearer(p.key)).send(body);

describe('a lone UTF-16 surrogate in any string is a 400 naming the field', () => {
  const cases: [string, () => Promise<import('supertest').Response>, string][] = [
    [
      'register: password',
      () => app.http.post('/auth/register').send({ email: uniqueEmail(), password: `correct horse ${LONE}` }),
      'password',
    ],
    [
      'register: name',
      () =>
        app.http.post('/auth/register').send({ email: uniqueEmail(), password: 'correct horse battery', name: LONE }),
      'name',
    ],
    ['login: password', () => app.http.post('/auth/login').send({ email: uniqueEmail(), password: LONE }), 'password'],
    ['organization name', () => asAdmin('post', '/admin/orgs', { name: LONE }), 'name'],
    ['project name', () => asAdmin('post', `/admin/orgs/${p.org.id}/projects`, { name: LONE }), 'name'],
    [
      'API key name',
      () => asAdmin('post', `/admin/orgs/${p.org.id}/projects/${p.project.id}/api-keys`, { name: LONE }),
      'name',
    ],
    ['rule name', () => asAdmin('post', rules(), rule({ name: LONE })), 'name'],
    ['rule agent', () => asAdmin('post', rules(), rule({ agent_name: LONE })), 'agent_name'],
    [
      'webhook secret',
      () =>
        asAdmin(
          'post',
          rules(),
          rule({ channel_config: { url: 'https://hooks.example.com/x', secret: `${LONE}-0123456789abcdef` } }),
        ),
      'channel_config.secret',
    ],
    [
      'preview agent',
      () => asAdmin('post', `${rules()}/preview`, { signal: 'total_runs', comparator: 'gt', agent_name: LONE }),
      'agent_name',
    ],
    ['run start', () => withKey('/ingest/agent/runs', { agent_name: LONE }), 'agent_name'],
  ];
  it.each(cases)('%s', async (_, send, path) => {
    expectFieldError(await send(), path);
  });

  it('a batch item with one is refused alone; its neighbour is stored', async () => {
    const res = await withKey('/ingest/agent/runs/batch', { runs: [{ agent_name: LONE }, { agent_name: 'fine' }] });
    expect(res.status).toBe(200);
    expect(res.body.results[0].error.code).toBe('validation_failed');
    expect(res.body.results[1].id).toBeDefined();
  });
});

describe('a NUL character in what Postgres stores is a 400, not a 500', () => {
  const cases: [string, () => Promise<import('supertest').Response>, string][] = [
    [
      'user name',
      () =>
        app.http.post('/auth/register').send({ email: uniqueEmail(), password: 'correct horse battery', name: NUL }),
      'name',
    ],
    ['organization name', () => asAdmin('post', '/admin/orgs', { name: NUL }), 'name'],
    ['organization rename', () => asAdmin('patch', `/admin/orgs/${p.org.id}`, { name: NUL }), 'name'],
    ['project name', () => asAdmin('post', `/admin/orgs/${p.org.id}/projects`, { name: NUL }), 'name'],
    [
      'API key name',
      () => asAdmin('post', `/admin/orgs/${p.org.id}/projects/${p.project.id}/api-keys`, { name: NUL }),
      'name',
    ],
    ['rule name', () => asAdmin('post', rules(), rule({ name: NUL })), 'name'],
    ['rule agent', () => asAdmin('post', rules(), rule({ agent_name: NUL })), 'agent_name'],
    [
      'webhook URL',
      () => asAdmin('post', rules(), rule({ channel_config: { url: `https://hooks.example.com/${NUL}` } })),
      'channel_config.url',
    ],
  ];
  it.each(cases)('%s', async (_, send, path) => {
    expectFieldError(await send(), path);
  });
});

describe('times and amounts the store cannot hold or sum', () => {
  it.each([['0000-01-01T00:00:00Z'], ['1899-12-31T23:59:59.999Z'], ['2300-01-01T00:00:00Z'], ['9999-12-31T00:00:00Z']])(
    'a run starting at %s',
    async (timestamp) => {
      expectFieldError(await withKey('/ingest/agent/runs', { agent_name: 'a', timestamp }), 'timestamp');
      const batch = await withKey('/ingest/agent/runs/batch', {
        runs: [{ agent_name: 'a', timestamp, status: 'completed' }],
      });
      expect(batch.body.results[0].error.code).toBe('validation_failed');
    },
  );

  it('the first storable instant is taken', async () => {
    const res = await withKey('/ingest/agent/runs/batch', {
      runs: [
        {
          agent_name: 'a',
          timestamp: '1900-01-01T00:00:00.000Z',
          status: 'completed',
          finished_at: '1900-01-01T00:00:01.000Z',
        },
      ],
    });
    expect(res.body.results[0]).toEqual({ id: expect.any(String), timestamp: '1900-01-01T00:00:00.000Z' });
  });

  it('a finish time and a step start outside them', async () => {
    const start = new Date(Date.now() - 60_000).toISOString();
    expectFieldError(await withKey('/ingest/agent/runs/batch', { runs: [] }), 'runs');
    const finished = await withKey('/ingest/agent/runs/batch', {
      runs: [{ agent_name: 'a', timestamp: start, status: 'completed', finished_at: '9999-01-01T00:00:00Z' }],
    });
    expect(finished.body.results[0].error.message).toMatch(/finished_at/);
    const step = await withKey('/ingest/agent/runs/batch', {
      runs: [
        {
          agent_name: 'a',
          timestamp: start,
          status: 'completed',
          steps: [{ index: 0, type: 'llm', started_at: '0001-01-01T00:00:00Z' }],
        },
      ],
    });
    expect(step.body.results[0].error.message).toMatch(/steps\.0\.started_at/);
  });

  it('step costs and tokens past what sums exactly', async () => {
    const start = new Date(Date.now() - 60_000).toISOString();
    const big = await withKey('/ingest/agent/runs/batch', {
      runs: [
        {
          agent_name: 'a',
          timestamp: start,
          status: 'completed',
          steps: [
            { index: 0, type: 'llm', cost_usd: 1e308 },
            { index: 1, type: 'llm', cost_usd: 1e308 },
          ],
        },
        {
          agent_name: 'a',
          timestamp: start,
          status: 'completed',
          steps: [{ index: 0, type: 'llm', tokens: Number.MAX_SAFE_INTEGER }],
        },
        { agent_name: 'a', timestamp: start, status: 'completed', total_cost_usd: 1e300 },
      ],
    });
    expect(
      big.body.results.map((result: { error?: { message: string } }) => result.error?.message.split(':')[0]),
    ).toEqual(['steps.0.cost_usd', 'steps.0.tokens', 'total_cost_usd']);
  });
});

describe('paging and query integers', () => {
  const runs = (query: string) => app.http.get(`/projects/${p.project.id}/agent/runs?${query}`).set(bearer(p.key));
  it.each([
    ['offset=9007199254740000&limit=1000', 'offset'],
    ['offset=99999999999999999999', 'offset'],
    ['limit=0x10', 'limit'],
    ['limit=1e3', 'limit'],
    ['offset=', 'offset'],
    ['limit=+5', 'limit'],
    ['limit=1001', 'limit'],
  ])('runs ?%s', async (query, path) => {
    expectFieldError(await runs(query), path);
  });

  it('the largest offset answers an empty page', async () => {
    const res = await runs(`offset=${Number.MAX_SAFE_INTEGER - 1000}&limit=1000`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual([]);
  });

  it('alert events: the same bounds', async () => {
    const created = await asAdmin('post', rules(), rule());
    const events = (query: string) =>
      app.http.get(`${rules()}/${created.body.id}/events?${query}`).set(bearer(p.admin.token));
    expectFieldError(await events('offset=9007199254740991'), 'offset');
    expectFieldError(await events('limit=0x10'), 'limit');
    expect((await events(`offset=${Number.MAX_SAFE_INTEGER - 1000}`)).body).toEqual([]);
  });
});

describe('a JSON body with bytes that are not UTF-8 is a 400 malformed_json on every route, and stores nothing', () => {
  const otlpSpanOf = (service: string) =>
    JSON.stringify({
      resourceSpans: [
        {
          resource: { attributes: [{ key: 'service.name', value: { stringValue: service } }] },
          scopeSpans: [{ spans: [{ traceId: `${'0'.repeat(31)}1`, spanId: `${'0'.repeat(15)}1`, name: 'chat' }] }],
        },
      ],
    });
  // {"…":"A\xff\xfeB"}: a lenient decoder would store "A\ufffd\ufffdB".
  const invalid = (json: string) => {
    const [before, after] = json.split('A~B');
    return Buffer.concat([Buffer.from(`${before}A`), Buffer.from([0xff, 0xfe]), Buffer.from(`B${after}`)]);
  };
  const post = (path: string, body: Buffer, auth: Record<string, string> = {}, encoding?: string) => {
    // The bytes as they are: superagent would serialize a Buffer sent as JSON.
    const req = app.http
      .post(path)
      .set(auth)
      .set('Content-Type', 'application/json')
      .serialize((bytes: unknown) => bytes as string);
    return encoding ? req.set('Content-Encoding', encoding).send(gzipSync(body)) : req.send(body);
  };
  const cases: [string, () => Promise<import('supertest').Response>][] = [
    ['register', () => post('/auth/register', invalid(`{"email":"${uniqueEmail()}","password":"A~B-long-enough"}`))],
    ['organization', () => post('/admin/orgs', invalid('{"name":"A~B"}'), bearer(p.admin.token))],
    ['run start', () => post('/ingest/agent/runs', invalid('{"agent_name":"A~B"}'), bearer(p.key))],
    ['run start, gzip', () => post('/ingest/agent/runs', invalid('{"agent_name":"A~B"}'), bearer(p.key), 'gzip')],
    ['batch', () => post('/ingest/agent/runs/batch', invalid('{"runs":[{"agent_name":"A~B"}]}'), bearer(p.key))],
    ['rule', () => post(rules(), invalid(JSON.stringify(rule({ name: 'A~B' }))), bearer(p.admin.token))],
    // A span of a service named A~B: a lenient decoder would make its run's agent "A\ufffd\ufffdB".
    ['OTLP/JSON export', () => post('/v1/traces', invalid(otlpSpanOf('A~B')), bearer(p.key))],
  ];
  it.each(cases)('%s', async (_, send) => {
    const res = await send();
    expectError(res, 400, 'malformed_json');
    expect(res.body.error.message).toMatch(/UTF-8/);
  });

  it('no run was stored by them', async () => {
    const to = new Date(app.clock.now().getTime() + 60_000).toISOString();
    const runs = await app.http.get(`/projects/${p.project.id}/agent/runs`).query({ to }).set(bearer(p.key));
    expect(runs.status).toBe(200);
    expect(runs.body.filter((run: { agent_name: string }) => run.agent_name.includes('\ufffd'))).toEqual([]);
  });
});

it('a session cookie that is not valid percent-encoding is a 401', async () => {
  const res = await app.http.get('/auth/me').set('Cookie', 'runwatch_session=%E0%A4%A');
  expectError(res, 401, 'unauthenticated');
});

it("data the store refuses in an insert's rows is a 400 (no retry changes it); in a query, a service bug", async () => {
  const insert = app.stores.ch.insertLines('runs', ['project_id'], [JSON.stringify([`not a uuid ${randomUUID()}`])]);
  await expect(insert).rejects.toMatchObject({ status: 400, code: 'validation_failed' });
  const query = app.stores.ch.query({
    name: 'test.refused',
    sql: 'SELECT toUInt8({value:String}) AS value',
    params: { value: 'not a number' },
  });
  await expect(query).rejects.toMatchObject({ status: 503, code: 'unavailable' });
});
