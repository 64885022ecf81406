// Fuzzing every operation of /openapi.json (property-based, fast-check): requests built from each operation's own
// schemas — mostly valid, with edge values mixed in (lone surrogates, NUL, huge and fractional numbers, wrong
// types, unknown fields) — and junk bodies. With the stores up, no answer may be a 500 or a 503, and every error
// has the contract's shape. The number of requests sent is printed.
import fc from 'fast-check';
import supertest from 'supertest';
import { listen } from '../otlp/otel';
import { startTestApp, type TestApp } from '../support/app';
import { setUpProject } from '../support/fixtures';

/** The parts of /openapi.json's JSON schemas that requests are built from. */
interface Schema {
  $ref?: string;
  anyOf?: Schema[];
  oneOf?: Schema[];
  enum?: unknown[];
  const?: unknown;
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  minimum?: number;
  maximum?: number;
  format?: string;
}
type Operation = {
  method: string;
  path: string;
  parameters?: { name: string; in: string; schema: Schema }[];
  requestBody?: { content: Record<string, { schema: Schema }> };
  security?: Record<string, unknown>[];
};

const RUNS_PER_OPERATION = Number(process.env.FUZZ_RUNS ?? 150);

let app: TestApp;
let server: Awaited<ReturnType<typeof listen>>;
// Through the service's own HTTP server: node's parser errors (a 64 KB query string) are answered there too.
let http: ReturnType<typeof supertest>;
let p: Awaited<ReturnType<typeof setUpProject>>;
let document: { paths: Record<string, Record<string, Operation>>; components?: { schemas?: Record<string, Schema> } };
let ruleId: string;
beforeAll(async () => {
  app = await startTestApp();
  server = await listen(app);
  http = supertest(server.url);
  p = await setUpProject(app);
  document = (await app.http.get('/openapi.json')).body;
  const rule = await app.http
    .post(`/admin/orgs/${p.org.id}/projects/${p.project.id}/alert-rules`)
    .set('Authorization', `Bearer ${p.admin.token}`)
    .send({
      name: 'fuzzed',
      class: 'aggregate',
      signal: 'total_runs',
      severity: 'info',
      channel: 'webhook',
      channel_config: { url: 'https://hooks.example.com/x' },
    });
  ruleId = rule.body.id;
});
afterAll(async () => {
  await server.close();
  await app.close();
});

const EDGE_STRINGS = [
  '',
  ' ',
  'x\ud800',
  'a\u0000b',
  '0x10',
  '1e309',
  '-1',
  '😀'.repeat(300),
  'x'.repeat(70_000),
  '../../etc',
  '%E0%A4%A',
  'null',
];
const EDGE_NUMBERS = [0, -1, 1.5, 2 ** 53, 2 ** 64, -(2 ** 63), 1e308, Number.MIN_VALUE, 3651, 1001];
// A value of another type than the schema's.
const wrongType = fc.oneof(fc.constantFrom<unknown>(null, true, [], {}, 'text', 1), fc.jsonValue({ maxDepth: 3 }));
const edgeOr = <T>(valid: fc.Arbitrary<T>, edges: readonly T[]) =>
  fc.oneof({ weight: 2, arbitrary: valid }, { weight: 1, arbitrary: fc.constantFrom(...edges) });

/** The schema a $ref names, or the schema itself. */
function resolve(schema: Schema): Schema {
  if (typeof schema?.$ref !== 'string') return schema ?? {};
  const name = schema.$ref.split('/').pop()!;
  return document.components?.schemas?.[name] ?? {};
}

/** Values for a JSON schema: mostly valid ones, an edge value now and then, nested up to a depth. */
function valueOf(raw: Schema, depth = 0): fc.Arbitrary<unknown> {
  const schema = resolve(raw);
  const variants = schema.anyOf ?? schema.oneOf;
  const valid = (() => {
    if (depth > 4) return fc.constant(null);
    if (variants) return fc.oneof(...variants.map((variant: Schema) => valueOf(variant, depth + 1)));
    if (schema.enum) return fc.constantFrom(...schema.enum);
    if (schema.const !== undefined) return fc.constant(schema.const);
    switch (Array.isArray(schema.type) ? schema.type[0] : schema.type) {
      case 'object': {
        const properties = Object.entries<Schema>(schema.properties ?? {});
        const shape = Object.fromEntries(properties.map(([name, property]) => [name, valueOf(property, depth + 1)]));
        return fc.record(shape, { requiredKeys: (schema.required ?? []).filter((name: string) => name in shape) });
      }
      case 'array':
        return fc.array(valueOf(schema.items ?? {}, depth + 1), { maxLength: 4 });
      case 'integer':
        return edgeOr(
          fc.integer({ min: schema.minimum ?? -10, max: Math.min(schema.maximum ?? 10_000, 10_000) }),
          EDGE_NUMBERS,
        );
      case 'number':
        return edgeOr(
          fc.double({ min: schema.minimum ?? -1e6, max: schema.maximum ?? 1e6, noNaN: true }),
          EDGE_NUMBERS,
        );
      case 'boolean':
        return fc.boolean();
      case 'string':
        if (schema.format === 'uuid') return fc.uuid();
        if (schema.format === 'date-time')
          return fc
            .date({ min: new Date('1800-01-01'), max: new Date('2400-01-01'), noInvalidDate: true })
            .map((date) => date.toISOString());
        if (schema.format === 'email') return fc.emailAddress();
        return edgeOr(fc.string({ maxLength: 30 }), EDGE_STRINGS);
      default:
        return fc.jsonValue({ maxDepth: 2 });
    }
  })();
  return fc.oneof({ weight: 7, arbitrary: valid }, { weight: 1, arbitrary: wrongType });
}

/** A real id for a path parameter (so that requests reach their handlers), or now and then another one. */
function pathValue(name: string): fc.Arbitrary<string> {
  const known: Record<string, string> = {
    orgID: p.org.id,
    projectID: p.project.id,
    ruleID: ruleId,
    keyID: p.apiKey.id,
    userID: p.admin.user.id,
  };
  return fc.oneof(
    { weight: 6, arbitrary: fc.constant(known[name] ?? '00000000-0000-4000-8000-000000000000') },
    { weight: 1, arbitrary: fc.uuid() },
    { weight: 1, arbitrary: fc.constantFrom('not-a-uuid', '%E0%A4%A', 'x'.repeat(300)) },
  );
}

function requestOf(operation: Operation) {
  const parameters = operation.parameters ?? [];
  const path = fc.record(
    Object.fromEntries(
      parameters
        .filter((parameter) => parameter.in === 'path')
        .map((parameter) => [parameter.name, pathValue(parameter.name)]),
    ),
  );
  const query = fc.record(
    Object.fromEntries(
      parameters
        .filter((parameter) => parameter.in === 'query')
        .map((parameter) => [parameter.name, valueOf(parameter.schema)]),
    ),
    { requiredKeys: [] },
  );
  const bodySchema = operation.requestBody?.content?.['application/json']?.schema;
  const body = bodySchema
    ? fc.oneof({ weight: 4, arbitrary: valueOf(bodySchema) }, { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 4 }) })
    : fc.constant(undefined);
  // Mostly a credential the operation takes (so that requests get past authentication), now and then a bad one.
  const schemes = (operation.security ?? []).flatMap((requirement) => Object.keys(requirement));
  const valid = [
    ...(schemes.includes('apiKey') ? [p.key] : []),
    ...(schemes.some((scheme) => scheme.startsWith('session')) ? [p.admin.token] : []),
  ];
  const credential = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom('', ...valid) },
    { weight: 1, arbitrary: fc.constantFrom('', `rw_${'x'.repeat(40)}`, 'not a token') },
  );
  return fc.record({ path, query, body, credential });
}

const operations = (): Operation[] =>
  Object.entries<Record<string, Operation>>(document.paths).flatMap(([path, methods]) =>
    Object.entries(methods)
      .filter(([method]) => ['get', 'post', 'patch', 'delete'].includes(method))
      .map(([method, operation]) => ({ ...operation, method, path })),
  );

it('no operation answers 500 or 503 with the stores up, and every error is in the contract shape', async () => {
  let sent = 0;
  const failures: string[] = [];
  for (const operation of operations()) {
    // Deleting the fixtures would leave the other operations nothing to reach.
    if (operation.method === 'delete') continue;
    await fc
      .assert(
        fc.asyncProperty(requestOf(operation), async ({ path, query, body, credential }) => {
          const url = operation.path.replace(/\{(\w+)\}/g, (_, name: string) =>
            encodeURIComponent(String((path as Record<string, string>)[name])),
          );
          const search = new URLSearchParams(
            Object.entries(query).map(([name, value]): [string, string] => [
              name,
              typeof value === 'string' ? value : JSON.stringify(value),
            ]),
          );
          let request = http[operation.method as 'get'](`${url}?${search}`);
          if (credential) request = request.set('Authorization', `Bearer ${credential}`);
          const res = await (body === undefined
            ? request
            : request.set('Content-Type', 'application/json').send(JSON.stringify(body)));
          sent += 1;
          const shaped =
            res.status < 400 ||
            (res.body?.error &&
              typeof res.body.error.code === 'string' &&
              Array.isArray(res.body.error.details) &&
              res.body.error.request_id === res.headers['x-request-id']);
          if (res.status >= 500 || !shaped)
            failures.push(
              `${operation.method.toUpperCase()} ${`${url}?${search}`.slice(0, 300)} → ` +
                `${res.status} ${JSON.stringify(res.body).slice(0, 300)}`,
            );
          return res.status < 500 && Boolean(shaped);
        }),
        { numRuns: RUNS_PER_OPERATION, seed: 20261124, endOnFailure: true },
      )
      .catch(() => undefined);
  }
  process.stdout.write(`fuzz: ${sent} requests over ${operations().length} operations\n`);
  expect(failures).toEqual([]);
}, 240_000);
