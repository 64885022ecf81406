// Contract section 1 through the real server: probes, request ids, the error body, JSON-only bodies, path ids.
import packageJson from '../../package.json';
import { startTestApp, type TestApp } from '../support/app';
import { expectError, TIMESTAMP } from '../support/assertions';
import { bearer, registerUser } from '../support/fixtures';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.close());

describe('probes', () => {
  it('GET /healthz answers 200 ok', async () => {
    const res = await app.http.get('/healthz').expect(200);
    expect(res.body).toEqual({ status: 'ok' });
  });

  it('GET /readyz answers 200 ready when both stores answer, with the ingest backlog (none here)', async () => {
    const res = await app.http.get('/readyz').expect(200);
    expect(res.body).toEqual({ status: 'ready', ingest_backlog: { rows: 0, bytes: 0, oldest_age_ms: 0 } });
  });
});

describe('X-Request-Id', () => {
  it('is generated when the request sent none', async () => {
    const res = await app.http.get('/healthz').expect(200);
    expect(res.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('is echoed when the request sent one', async () => {
    const res = await app.http.get('/healthz').set('X-Request-Id', 'client-req.42:a_b').expect(200);
    expect(res.headers['x-request-id']).toBe('client-req.42:a_b');
  });

  it('is echoed into the error body of a failed request', async () => {
    const res = await app.http.get('/auth/me').set('X-Request-Id', 'trace-401');
    expect(expectError(res, 401, 'unauthenticated').request_id).toBe('trace-401');
  });

  it('is replaced by a generated one when the sent one is unusable (spaces, over 128 characters)', async () => {
    for (const sent of ['has spaces in it', 'x'.repeat(129)]) {
      const res = await app.http.get('/nowhere').set('X-Request-Id', sent);
      expect(res.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
      expectError(res, 404, 'not_found');
    }
  });
});

describe('unknown routes', () => {
  it.each([
    ['get', '/nowhere'],
    ['post', '/admin/nothing-here'],
    ['put', '/admin/orgs'],
    ['delete', '/auth/me'],
  ] as const)('%s %s → 404 with the error body', async (method, path) => {
    const res = await app.http[method](path);
    const error = expectError(res, 404, 'not_found');
    expect(error.details).toEqual([]);
  });
});

describe('request bodies', () => {
  let token: string;
  beforeAll(async () => {
    ({ token } = await registerUser(app));
  });

  it('malformed JSON → 400 malformed_json, on a public and on a signed-in route', async () => {
    const register = await app.http
      .post('/auth/register')
      .set('Content-Type', 'application/json')
      .send('{"email": "a@b.c",');
    expectError(register, 400, 'malformed_json');
    const org = await app.http
      .post('/admin/orgs')
      .set(bearer(token))
      .set('Content-Type', 'application/json')
      .send('{name: unquoted}');
    expectError(org, 400, 'malformed_json');
  });

  it('a JSON body that is not an object or array (strict JSON) → 400 malformed_json', async () => {
    const res = await app.http
      .post('/admin/orgs')
      .set(bearer(token))
      .set('Content-Type', 'application/json')
      .send('"just a string"');
    expectError(res, 400, 'malformed_json');
  });

  it.each([
    ['text/plain', 'name=x'],
    ['application/x-www-form-urlencoded', 'name=x'],
    ['multipart/form-data; boundary=zzz', '--zzz\r\nContent-Disposition: form-data; name="name"\r\n\r\nx\r\n--zzz--'],
    ['application/xml', '<name>x</name>'],
  ])('a body of type %s → 415 unsupported_media_type', async (type, body) => {
    const res = await app.http.post('/admin/orgs').set(bearer(token)).set('Content-Type', type).send(body);
    expectError(res, 415, 'unsupported_media_type');
  });

  it('a body with no Content-Type at all → 415', async () => {
    const res = await app.http
      .post('/auth/login')
      .set('Content-Type', '')
      .send(Buffer.from('{"email":"a@b.c","password":"x"}'));
    expectError(res, 415, 'unsupported_media_type');
  });

  it('application/json with a charset parameter is accepted', async () => {
    const res = await app.http
      .post('/admin/orgs')
      .set(bearer(token))
      .set('Content-Type', 'application/json; charset=utf-8')
      .send(JSON.stringify({ name: 'charset org' }));
    expect(res.status).toBe(201);
  });

  it('a missing field and an extra field → 400 validation_failed with each field path in details', async () => {
    const res = await app.http
      .post('/auth/register')
      .send({ password: 'long enough password', nickname: 'x', role: 'admin' });
    const error = expectError(res, 400, 'validation_failed');
    expect(error.details.map((detail) => detail.path).sort()).toEqual(['email', 'nickname', 'role']);
    expect(error.message).toMatch(/^(email|nickname|role): /);
    for (const detail of error.details) expect(detail.message).toEqual(expect.any(String));
  });

  it('a field of the wrong type → 400 validation_failed naming it', async () => {
    const res = await app.http.post('/admin/orgs').set(bearer(token)).send({ name: 42 });
    const error = expectError(res, 400, 'validation_failed');
    expect(error.details).toEqual([{ path: 'name', message: expect.any(String) }]);
    expect(error.message).toBe(`name: ${error.details[0].message}`);
  });

  it('no body where one is required → 400 validation_failed', async () => {
    const res = await app.http.post('/admin/orgs').set(bearer(token));
    const error = expectError(res, 400, 'validation_failed');
    expect(error.details).toHaveLength(1);
  });
});

describe('path identifiers', () => {
  let token: string;
  let orgId: string;
  beforeAll(async () => {
    const user = await registerUser(app);
    token = user.token;
    orgId = user.org.id;
  });

  it.each([
    ['get', '/admin/orgs/not-a-uuid', 'orgID'],
    ['patch', '/admin/orgs/123', 'orgID'],
    ['delete', '/admin/orgs/{ORG}/members/xyz', 'userID'],
    ['patch', '/admin/orgs/{ORG}/projects/1234', 'projectID'],
    ['delete', '/admin/orgs/{ORG}/projects/00000000-0000-0000-0000-00000000000g', 'projectID'],
    ['get', '/admin/orgs/{ORG}/projects/abc/api-keys', 'projectID'],
    ['delete', '/admin/orgs/{ORG}/projects/0190b3a5-6c4e-7d3f-8a1b-2c3d4e5f6a7b/api-keys/nope', 'keyID'],
  ] as const)('%s %s → 400 invalid_id naming %s', async (method, template, param) => {
    const path = template.replace('{ORG}', orgId);
    const res = await app.http[method](path)
      .set(bearer(token))
      .send(method === 'patch' ? { name: 'x' } : undefined);
    const error = expectError(res, 400, 'invalid_id');
    expect(error.details).toEqual([{ path: param, message: expect.any(String) }]);
  });

  it('a non-UUID path id is refused before authentication (no token needed to learn it is malformed)', async () => {
    expectError(await app.http.get('/admin/orgs/not-a-uuid'), 400, 'invalid_id');
  });

  it('a path segment that is not valid percent-encoding → 400, not 500', async () => {
    const res = await app.http.get('/admin/orgs/%E0%A4%A').set(bearer(token));
    expectError(res, 400, 'invalid_id');
  });
});

describe('responses', () => {
  it('timestamps are RFC 3339 UTC with milliseconds and absent values are null', async () => {
    const { token } = await registerUser(app);
    const me = await app.http.get('/auth/me').set(bearer(token)).expect(200);
    expect(me.body.user.created_at).toMatch(TIMESTAMP);
    expect(me.body.organizations[0].created_at).toMatch(TIMESTAMP);
    expect(me.body.user).toHaveProperty('verified_at', null);
  });

  it('does not announce the framework', async () => {
    const res = await app.http.get('/healthz');
    expect(res.headers['x-powered-by']).toBeUndefined();
  });
});

describe('GET /openapi.json', () => {
  interface Response {
    $ref?: string;
    headers: Record<string, unknown>;
    content?: Record<string, { schema: Record<string, unknown> }>;
  }
  let document: {
    openapi: string;
    info: { title: string; version: string; license: { identifier: string } };
    servers: { url: string }[];
    paths: Record<
      string,
      Record<
        string,
        {
          operationId: string;
          parameters: { name: string; in: string; required: boolean; schema: Record<string, unknown> }[];
          requestBody?: { required: boolean; content: Record<string, { schema: Record<string, unknown> }> };
          responses: Record<string, Response>;
          security: unknown[];
        }
      >
    >;
    components: {
      schemas: Record<string, Record<string, unknown>>;
      responses: Record<string, Response>;
      securitySchemes: Record<string, unknown>;
    };
  };
  beforeAll(async () => {
    const res = await app.http
      .get('/openapi.json')
      .expect(200)
      .expect('Content-Type', /application\/json/);
    document = res.body;
  });

  const openApiPath = (path: string) => path.replace(/:([A-Za-z]+)/g, '{$1}');
  const operations = () => Object.values(document.paths).flatMap((byMethod) => Object.values(byMethod));
  /** A response, its reference to `components.responses` followed. */
  const responseOf = (response: Response) =>
    response.$ref ? document.components.responses[response.$ref.split('/').pop()!] : response;
  const isError = (status: string) => status === 'default' || Number(status) >= 400;

  it('is OpenAPI 3.1.0, of this package', () => {
    expect(document.openapi).toBe('3.1.0');
    expect(document.info).toMatchObject({
      title: 'runwatch',
      version: packageJson.version,
      license: { identifier: packageJson.license },
    });
    expect(document.servers).toEqual([{ url: '/' }]);
    expect(Object.keys(document.components.securitySchemes).sort()).toEqual(['apiKey', 'session', 'sessionCookie']);
  });

  it('describes every mounted route, and nothing else', () => {
    const mounted = app.routes.map((route) => `${route.method} ${openApiPath(route.path)}`).sort();
    const described = Object.entries(document.paths)
      .flatMap(([path, operations]) => Object.keys(operations).map((method) => `${method} ${path}`))
      .sort();
    expect(described).toEqual(mounted);
    // The foundation's own routes are among them.
    expect(described).toEqual(
      expect.arrayContaining([
        'post /auth/register',
        'post /auth/login',
        'post /auth/logout',
        'get /auth/me',
        'post /admin/orgs',
        'get /admin/orgs',
        'get /admin/orgs/{orgID}',
        'patch /admin/orgs/{orgID}',
        'get /admin/orgs/{orgID}/members',
        'post /admin/orgs/{orgID}/members',
        'patch /admin/orgs/{orgID}/members/{userID}',
        'delete /admin/orgs/{orgID}/members/{userID}',
        'post /admin/orgs/{orgID}/projects',
        'get /admin/orgs/{orgID}/projects',
        'patch /admin/orgs/{orgID}/projects/{projectID}',
        'delete /admin/orgs/{orgID}/projects/{projectID}',
        'post /admin/orgs/{orgID}/projects/{projectID}/api-keys',
        'get /admin/orgs/{orgID}/projects/{projectID}/api-keys',
        'delete /admin/orgs/{orgID}/projects/{projectID}/api-keys/{keyID}',
        'get /healthz',
        'get /readyz',
        'get /openapi.json',
      ]),
    );
  });

  it('gives every route with a body a JSON request body schema, and no other route one', () => {
    for (const route of app.routes) {
      const operation = document.paths[openApiPath(route.path)][route.method];
      if (route.body) {
        expect({ route: route.path, schema: operation.requestBody?.content['application/json']?.schema }).toEqual({
          route: route.path,
          schema: expect.any(Object),
        });
      } else {
        expect({ route: route.path, requestBody: operation.requestBody }).toEqual({
          route: route.path,
          requestBody: undefined,
        });
      }
    }
  });

  it('declares each path parameter of each route as required', () => {
    for (const route of app.routes) {
      const names = [...route.path.matchAll(/:([A-Za-z]+)/g)].map((match) => match[1]);
      const operation = document.paths[openApiPath(route.path)][route.method];
      const declared = operation.parameters.filter((parameter) => parameter.in === 'path');
      expect({ route: route.path, params: declared.map((p) => p.name).sort() }).toEqual({
        route: route.path,
        params: names.sort(),
      });
      for (const parameter of declared) expect(parameter.required).toBe(true);
    }
  });

  it('gives every route its success status, and the error body for each error it answers and for any other', () => {
    for (const route of app.routes) {
      const { responses } = document.paths[openApiPath(route.path)][route.method];
      const statuses = Object.keys(responses);
      const success = statuses.filter((status) => !isError(status));
      expect({ route: route.path, success }).toEqual({ route: route.path, success: [String(route.status ?? 200)] });
      expect(statuses).toContain('default');
      for (const status of statuses.filter(isError)) {
        expect(responseOf(responses[status]).content!['application/json'].schema).toEqual({
          $ref: '#/components/schemas/Error',
        });
      }
    }
  });

  it.each([
    ['get', '/healthz', ['200', 'default']],
    ['get', '/readyz', ['200', '503', 'default']],
    ['post', '/auth/register', ['201', '400', '409', '413', '415', '429', '503', 'default']],
    ['post', '/auth/login', ['200', '400', '401', '413', '415', '429', '503', 'default']],
    ['post', '/auth/logout', ['204', '401', '503', 'default']],
    ['get', '/admin/orgs/{orgID}', ['200', '400', '401', '404', '503', 'default']],
    ['post', '/admin/orgs/{orgID}/members', ['201', '400', '401', '403', '404', '409', '413', '415', '503', 'default']],
    ['get', '/projects/{projectID}/agent/runs', ['200', '400', '401', '403', '404', '503', 'default']],
    ['post', '/ingest/agent/runs/{runID}/finish', ['200', '400', '401', '404', '409', '413', '415', '503', 'default']],
  ])('%s %s answers %j', (method, path, statuses) => {
    expect(Object.keys(document.paths[path][method].responses)).toEqual(statuses);
  });

  it('names every operation, each name once', () => {
    const names = operations().map((operation) => operation.operationId);
    expect(names.every((name) => /^[a-z][A-Za-z]+$/.test(name))).toBe(true);
    expect(new Set(names).size).toBe(names.length);
  });

  it('sends X-Request-Id with every response, and Retry-After with every 429 and 503', () => {
    for (const { responses } of operations()) {
      for (const [status, response] of Object.entries(responses)) {
        const headers = Object.keys(responseOf(response).headers);
        expect(headers).toContain('X-Request-Id');
        if (status === '429' || status === '503') expect(headers).toContain('Retry-After');
      }
    }
  });

  it('shows X-Total-Count on the run list; the session cookie set by register and login and cleared by logout', () => {
    const headersOf = (path: string, method: string, status: string) =>
      Object.keys(document.paths[path][method].responses[status].headers);
    expect(headersOf('/projects/{projectID}/agent/runs', 'get', '200')).toContain('X-Total-Count');
    expect(headersOf('/auth/register', 'post', '201')).toContain('Set-Cookie');
    expect(headersOf('/auth/login', 'post', '200')).toContain('Set-Cookie');
    expect(headersOf('/auth/logout', 'post', '204')).toContain('Set-Cookie');
  });

  it('names the shared schemas once, in components, and refers to them', () => {
    expect(Object.keys(document.components.schemas)).toEqual(
      expect.arrayContaining([
        'Run',
        'Step',
        'AlertRule',
        'AlertEvent',
        'SummaryEntry',
        'HealthEntry',
        'TimeseriesBucket',
        'Project',
        'Organization',
        'Member',
        'ApiKey',
        'User',
        'Error',
        'PreviewResult',
        'RunBatchItem',
        'StepInput',
      ]),
    );
    const run =
      document.paths['/projects/{projectID}/agent/runs/{runID}'].get.responses['200'].content!['application/json']
        .schema;
    expect(run).toEqual({ $ref: '#/components/schemas/Run' });
    expect(JSON.stringify(document)).not.toContain('#/$defs/');
  });

  it('shows the batch items whole, though the server checks them one by one', () => {
    expect(document.components.schemas.RunBatch).toMatchObject({
      properties: {
        runs: { type: 'array', minItems: 1, maxItems: 1000, items: { $ref: '#/components/schemas/RunBatchItem' } },
      },
    });
  });

  it("shows the server's bounds: e-mails, thresholds, windows, counts, pages; a body the server may go without", () => {
    const register = document.paths['/auth/register'].post.requestBody!.content['application/json'].schema as {
      properties: Record<string, unknown>;
    };
    expect(register.properties.email).toMatchObject({ type: 'string', format: 'email', maxLength: 254 });
    const rule = document.components.schemas.AlertRuleCreate as { properties: Record<string, unknown> };
    expect(rule.properties.threshold).toMatchObject({ minimum: 0 });
    expect(rule.properties.window_seconds).toMatchObject({ minimum: 0, maximum: 2_592_000 });
    const run = document.components.schemas.Run as { properties: Record<string, unknown> };
    expect(run.properties.total_steps).toMatchObject({ type: 'integer', minimum: 0 });
    const limit = document.paths['/projects/{projectID}/agent/runs'].get.parameters.find(
      (parameter) => parameter.name === 'limit',
    );
    expect(limit?.schema).toEqual({ type: 'integer', minimum: 1, maximum: 1000 });
    expect(document.paths['/admin/orgs/{orgID}/projects/{projectID}/api-keys'].post.requestBody?.required).toBe(false);
    expect(document.paths['/auth/register'].post.requestBody?.required).toBe(true);
  });

  it('shows the register body with its fields, unknown fields refused', () => {
    const schema = document.paths['/auth/register'].post.requestBody!.content['application/json'].schema as {
      properties: Record<string, unknown>;
      required: string[];
      additionalProperties: unknown;
    };
    expect(Object.keys(schema.properties).sort()).toEqual(['email', 'name', 'password']);
    expect(schema.required.sort()).toEqual(['email', 'password']);
    expect(schema.additionalProperties).toBe(false);
  });

  it('marks the public routes as public and the admin routes as signed-in', () => {
    expect(document.paths['/auth/register'].post.security).toEqual([]);
    expect(document.paths['/healthz'].get.security).toEqual([]);
    expect(document.paths['/admin/orgs/{orgID}'].patch.security).toEqual(expect.arrayContaining([{ session: [] }]));
  });
});
