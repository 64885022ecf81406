// Builds the OpenAPI 3.1 document from the route declarations: the same zod schemas that validate requests. Schemas
// named where they are declared (`.meta({ id: 'Run' })`) become `components.schemas`, so generated clients name them
// too.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { z } from 'zod';
import { errorSchema } from './errors';
import type { AuthRequirement, ErrorStatus, RouteDefinition } from './route';

type JsonSchema = Record<string, unknown>;
type Convert = (schema: z.ZodType, io: 'input' | 'output') => JsonSchema;

// package.json is as far from dist/http as from src/http (the image keeps it beside dist/).
const packageJson = JSON.parse(readFileSync(resolve(__dirname, '..', '..', 'package.json'), 'utf8')) as {
  name: string;
  version: string;
  description: string;
  license: string;
};

/** The error responses (contract section 1), by status; `default` is any other: 500, a bug. */
const ERROR_RESPONSES: Record<ErrorStatus | 'default', { name: string; description: string; retryable?: true }> = {
  400: {
    name: 'BadRequest',
    description: 'Bad input: validation_failed, malformed_json, invalid_id, invalid_window or unsupported_signal',
  },
  401: {
    name: 'Unauthenticated',
    description: 'No, malformed, expired or revoked session or API key; or a wrong e-mail or password',
  },
  403: {
    name: 'Forbidden',
    description: "Authenticated, but the caller's role or the API key's project does not allow it",
  },
  404: {
    name: 'NotFound',
    description: 'The resource does not exist, or belongs to an organization the caller is not a member of',
  },
  409: {
    name: 'Conflict',
    description: 'The request conflicts with the current state (a duplicate, the last admin, a finished run)',
  },
  413: { name: 'PayloadTooLarge', description: 'The request body is over the limit' },
  415: { name: 'UnsupportedMediaType', description: 'The request body is not in a media type the route takes' },
  429: { name: 'RateLimited', description: 'Too many requests; retry after Retry-After seconds', retryable: true },
  503: {
    name: 'Unavailable',
    description: 'A store cannot answer; nothing was half-written; retry after Retry-After seconds',
    retryable: true,
  },
  default: { name: 'InternalError', description: 'Any other error: 500 internal, whose message holds no internals' },
};

// Every header documented is always sent with its response.
const HEADERS = {
  'X-Request-Id': {
    description: 'Echoed from the request when it sent a usable one, else generated; the error body carries it too',
    required: true,
    schema: { type: 'string' },
  },
  'Retry-After': {
    description: 'Seconds to wait before retrying',
    required: true,
    schema: { type: 'integer', minimum: 0 },
  },
};
const headerRef = (name: keyof typeof HEADERS) => ({ $ref: `#/components/headers/${name}` });

/** zod's refs into `$defs` as refs into `components.schemas`, at any depth. */
function toComponentRefs(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(toComponentRefs);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, inner]) => [
      key,
      key === '$ref' && typeof inner === 'string'
        ? inner.replace('#/$defs/', '#/components/schemas/')
        : toComponentRefs(inner),
    ]),
  );
}

/** Converts zod schemas to JSON Schema, collecting the named ones (zod's `$defs`) for `components.schemas`. */
function schemaConverter() {
  const named: Record<string, JsonSchema> = {};
  const convert: Convert = (schema, io) => {
    const json = z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'draft-2020-12' });
    const { $schema: _ignored, $defs = {}, ...root } = json as JsonSchema & { $defs?: Record<string, JsonSchema> };
    for (const [id, definition] of Object.entries($defs)) {
      const lifted = toComponentRefs(definition) as JsonSchema;
      // A name stands for one shape: two schemas of one name, or one that reads differently as input and output, is
      // a bug.
      if (id in named && !isDeepStrictEqual(named[id], lifted))
        throw new Error(`two different schemas are named ${id}`);
      named[id] = lifted;
    }
    return toComponentRefs(root) as JsonSchema;
  };
  return { convert, named };
}

function toOpenApiPath(path: string): string {
  return path.replace(/:([A-Za-z]+)/g, '{$1}');
}

function parametersOf(route: RouteDefinition, convert: Convert): JsonSchema[] {
  const describe = (schema: z.ZodType | undefined, location: 'path' | 'query') => {
    if (!schema) return [];
    const json = convert(schema, 'input') as { properties?: Record<string, JsonSchema>; required?: string[] };
    return Object.entries(json.properties ?? {}).map(([name, property]) => ({
      name,
      in: location,
      required: location === 'path' || (json.required ?? []).includes(name),
      schema: property,
    }));
  };
  return [...describe(route.params, 'path'), ...describe(route.query, 'query')];
}

function securityOf(auth: AuthRequirement): JsonSchema[] {
  switch (auth.kind) {
    case 'public':
      return [];
    case 'apiKey':
      return [{ apiKey: [] }];
    case 'projectRead':
      return [{ apiKey: [] }, { session: [] }, { sessionCookie: [] }];
    default:
      return [{ session: [] }, { sessionCookie: [] }];
  }
}

/** The error statuses a route can answer: those its declaration implies (the checks of http/route.ts), and its own. */
function errorStatusesOf(route: RouteDefinition): ErrorStatus[] {
  const { auth } = route;
  const implied: [ErrorStatus, boolean][] = [
    [400, Boolean(route.params || route.query || route.body)],
    [401, auth.kind !== 'public'],
    // Any member may do what a viewer may: only a higher role, or an API key of another project, is refused.
    [403, (auth.kind === 'org' && auth.role !== 'viewer') || auth.kind === 'projectRead'],
    // A path resource that does not exist, or that the caller may not know of.
    [404, route.params !== undefined],
    [413, route.body !== undefined],
    [415, route.body !== undefined],
    // Guards are rate limits.
    [429, route.guard !== undefined],
    // The authenticator reads Postgres, and every authenticated handler a store.
    [503, auth.kind !== 'public'],
  ];
  const statuses = new Set([
    ...implied.filter(([, applies]) => applies).map(([status]) => status),
    ...(route.errors ?? []),
  ]);
  return [...statuses].sort((a, b) => a - b);
}

function headersOf(route: RouteDefinition, convert: Convert): JsonSchema {
  const declared = Object.entries(route.responseHeaders ?? {}).map(([name, schema]) => {
    const { description, ...json } = convert(schema, 'output');
    return [name, { description, required: true, schema: json }];
  });
  return { 'X-Request-Id': headerRef('X-Request-Id'), ...Object.fromEntries(declared) };
}

function operationOf(route: RouteDefinition, convert: Convert): JsonSchema {
  const status = route.status ?? 200;
  // A route with a codec takes and answers its other media types too, each the encoding of the same schema.
  const mediaTypes = route.codec?.mediaTypes ?? ['application/json'];
  const contentOf = (schema: z.ZodType, io: 'input' | 'output') => {
    const json = convert(schema, io);
    return Object.fromEntries(mediaTypes.map((type) => [type, { schema: json }]));
  };
  const headers = headersOf(route, convert);
  const streamedContent = Object.entries(route.streamed ?? {}).map(([type, { description, binary }]) => [
    type,
    { schema: { type: 'string', description, ...(binary ? { format: 'binary' } : {}) } },
  ]);
  const success = route.streamed
    ? { description: 'Success, streamed', headers, content: Object.fromEntries(streamedContent) }
    : route.response && status !== 204
      ? { description: 'Success', headers, content: contentOf(route.response, 'output') }
      : { description: 'Success, no body', headers };
  const errors = errorStatusesOf(route).map((code) => [
    code,
    { $ref: `#/components/responses/${ERROR_RESPONSES[code].name}` },
  ]);
  const roleNote = route.auth.kind === 'org' ? ` Requires the ${route.auth.role} role or higher.` : '';
  // A body that validates when absent is optional (an API key's name).
  const requestBody = route.body && {
    required: !route.body.safeParse(undefined).success,
    content: contentOf(route.documentedBody ?? route.body, 'input'),
  };
  return {
    operationId: route.operationId,
    summary: route.summary,
    description: `${route.summary}.${roleNote}`,
    tags: [route.tag],
    parameters: parametersOf(route, convert),
    security: securityOf(route.auth),
    ...(requestBody ? { requestBody } : {}),
    responses: {
      [status]: success,
      ...Object.fromEntries(errors),
      default: { $ref: `#/components/responses/${ERROR_RESPONSES.default.name}` },
    },
  };
}

function errorResponses(convert: Convert): JsonSchema {
  const content = { 'application/json': { schema: convert(errorSchema, 'output') } };
  return Object.fromEntries(
    Object.values(ERROR_RESPONSES).map(({ name, description, retryable }) => {
      const headers = {
        'X-Request-Id': headerRef('X-Request-Id'),
        ...(retryable ? { 'Retry-After': headerRef('Retry-After') } : {}),
      };
      return [name, { description, headers, content }];
    }),
  );
}

export function buildOpenApiDocument(routes: readonly RouteDefinition[]): JsonSchema {
  const { convert, named } = schemaConverter();
  const paths: Record<string, Record<string, JsonSchema>> = {};
  for (const route of routes) {
    const path = toOpenApiPath(route.path);
    paths[path] = { ...paths[path], [route.method]: operationOf(route, convert) };
  }
  const responses = errorResponses(convert);
  const { name, version, description, license } = packageJson;
  return {
    openapi: '3.1.0',
    info: { title: name, version, description, license: { name: license, identifier: license } },
    // Relative: the service that serves this document, wherever it is deployed.
    servers: [{ url: '/' }],
    paths,
    components: {
      schemas: Object.fromEntries(Object.entries(named).sort(([a], [b]) => a.localeCompare(b))),
      responses,
      headers: HEADERS,
      securitySchemes: {
        session: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
        sessionCookie: { type: 'apiKey', in: 'cookie', name: 'runwatch_session' },
        apiKey: { type: 'http', scheme: 'bearer', description: 'A project API key: rw_ and 40 base62 characters' },
      },
    },
  };
}
