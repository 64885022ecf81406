// Builds the OpenAPI 3.1 document from the route declarations: the same zod schemas that validate requests.
import { z } from 'zod';
import { errorSchema } from './errors';
import type { AuthRequirement, RouteDefinition } from './route';

type JsonSchema = Record<string, unknown>;

function toJsonSchema(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'draft-2020-12' }) as JsonSchema;
  return rest;
}

function toOpenApiPath(path: string): string {
  return path.replace(/:([A-Za-z]+)/g, '{$1}');
}

function parametersOf(route: RouteDefinition): JsonSchema[] {
  const describe = (schema: z.ZodType | undefined, location: 'path' | 'query') => {
    if (!schema) return [];
    const json = toJsonSchema(schema, 'input') as { properties?: Record<string, JsonSchema>; required?: string[] };
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

function operationOf(route: RouteDefinition): JsonSchema {
  const status = String(route.status ?? 200);
  const errorResponse = { description: 'Error', content: { 'application/json': { schema: toJsonSchema(errorSchema, 'output') } } };
  const success = route.response && status !== '204'
    ? { description: 'Success', content: { 'application/json': { schema: toJsonSchema(route.response, 'output') } } }
    : { description: 'Success, no body' };
  const roleNote = route.auth.kind === 'org' ? ` Requires the ${route.auth.role} role or higher.` : '';
  return {
    summary: route.summary,
    description: `${route.summary}.${roleNote}`,
    tags: [route.tag],
    parameters: parametersOf(route),
    security: securityOf(route.auth),
    ...(route.body ? { requestBody: { required: true, content: { 'application/json': { schema: toJsonSchema(route.body, 'input') } } } } : {}),
    responses: { [status]: success, default: errorResponse },
  };
}

export function buildOpenApiDocument(routes: readonly RouteDefinition[], version: string): JsonSchema {
  const paths: Record<string, Record<string, JsonSchema>> = {};
  for (const route of routes) {
    const path = toOpenApiPath(route.path);
    paths[path] = { ...paths[path], [route.method]: operationOf(route) };
  }
  return {
    openapi: '3.1.0',
    info: { title: 'runwatch', version, description: 'Monitoring for runs of software agents.' },
    components: {
      securitySchemes: {
        session: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
        sessionCookie: { type: 'apiKey', in: 'cookie', name: 'runwatch_session' },
        apiKey: { type: 'http', scheme: 'bearer', description: 'A project API key, rw_ followed by 40 base62 characters' },
      },
    },
    paths,
  };
}
