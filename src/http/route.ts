// Declares a route once — method, path, auth, zod schemas, handler — and mounts it with validation derived from that.
import express, { type Express, type Request, type RequestHandler, type Response } from 'express';
import { z } from 'zod';
import { AppError, validationError } from './errors';

export type Role = 'viewer' | 'member' | 'admin';

export type AuthRequirement =
  | { kind: 'public' }
  | { kind: 'session' }
  | { kind: 'org'; role: Role }
  | { kind: 'apiKey' }
  | { kind: 'projectRead' };

export interface UserCaller {
  type: 'user';
  userId: string;
  sessionId: string;
}
export interface MemberCaller extends UserCaller {
  orgId: string;
  role: Role;
}
export interface KeyCaller {
  type: 'apiKey';
  keyId: string;
  projectId: string;
  orgId: string;
}
export type ProjectCaller = (MemberCaller | KeyCaller) & { projectId: string; orgId: string };

type CallerOf<A extends AuthRequirement> = A extends { kind: 'public' }
  ? null
  : A extends { kind: 'session' }
    ? UserCaller
    : A extends { kind: 'org' }
      ? MemberCaller
      : A extends { kind: 'apiKey' }
        ? KeyCaller
        : ProjectCaller;

/** How callers are recognised; implemented by the auth capability and injected, so http/ imports no capability. */
export interface Authenticator {
  session(req: Request): Promise<UserCaller>;
  member(req: Request, orgId: string, minimumRole: Role): Promise<MemberCaller>;
  apiKey(req: Request): Promise<KeyCaller>;
  projectReader(req: Request, projectId: string): Promise<ProjectCaller>;
}

type AnyObjectSchema = z.ZodType<Record<string, unknown>>;

export interface RouteDefinition<
  A extends AuthRequirement = AuthRequirement,
  P extends AnyObjectSchema = AnyObjectSchema,
  Q extends AnyObjectSchema = AnyObjectSchema,
  B extends z.ZodType = z.ZodType,
  R extends z.ZodType = z.ZodType,
> {
  method: 'get' | 'post' | 'patch' | 'delete';
  /** Express-style path: `/admin/orgs/:orgID`. */
  path: string;
  summary: string;
  tag: string;
  auth: A;
  params?: P;
  query?: Q;
  body?: B;
  /** The success body; omitted for 204 responses. */
  response?: R;
  status?: 200 | 201 | 204;
  /** Body size limit in bytes; defaults to the service's general limit. */
  bodyLimit?: number;
  /** Runs before anything else, for rate limits; throws an AppError to refuse. */
  guard?: (req: Request) => void;
  handler(input: {
    params: z.infer<P>;
    query: z.infer<Q>;
    body: z.infer<B>;
    caller: CallerOf<A>;
    req: Request;
    res: Response;
  }): Promise<z.input<R> | void>;
}

/** Identity helper that fixes the generic parameters, so the handler's arguments are typed from the schemas. */
export function defineRoute<
  A extends AuthRequirement,
  P extends AnyObjectSchema = z.ZodObject<{}>,
  Q extends AnyObjectSchema = z.ZodObject<{}>,
  B extends z.ZodType = z.ZodUndefined,
  R extends z.ZodType = z.ZodVoid,
>(definition: RouteDefinition<A, P, Q, B, R>): RouteDefinition {
  return definition as unknown as RouteDefinition;
}

export interface MountOptions {
  authenticator: Authenticator;
  bodyLimitBytes: number;
  /** In tests every response is checked against its declared schema, so the OpenAPI document cannot drift. */
  validateResponses: boolean;
}

const noBodyMethods = new Set(['GET', 'HEAD', 'DELETE']);

function hasBody(req: Request): boolean {
  return req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
}

const requireJson: RequestHandler = (req, _res, next) => {
  if (!noBodyMethods.has(req.method) && hasBody(req) && !req.is('application/json')) {
    next(new AppError(415, 'unsupported_media_type', 'request body must be application/json'));
    return;
  }
  next();
};

async function identify(route: RouteDefinition, req: Request, authenticator: Authenticator, params: Record<string, unknown>) {
  switch (route.auth.kind) {
    case 'public':
      return null;
    case 'session':
      return authenticator.session(req);
    case 'org':
      return authenticator.member(req, String(params.orgID), route.auth.role);
    case 'apiKey':
      return authenticator.apiKey(req);
    case 'projectRead':
      return authenticator.projectReader(req, String(params.projectID));
  }
}

function parseOrThrow<T>(schema: z.ZodType<T> | undefined, value: unknown, code: 'validation_failed' | 'invalid_id', where: string[]): T {
  if (!schema) return {} as T;
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw validationError(code, parsed.error.issues, where);
  return parsed.data;
}

function toHandler(route: RouteDefinition, options: MountOptions): RequestHandler {
  return async (req, res) => {
    // A path parameter that is not a UUID is refused before any store is asked about it.
    const params = parseOrThrow(route.params, req.params, 'invalid_id', []);
    const caller = await identify(route, req, options.authenticator, params);
    const query = parseOrThrow(route.query, req.query, 'validation_failed', []);
    const body = route.body ? parseOrThrow(route.body, req.body, 'validation_failed', []) : undefined;
    const result = await route.handler({ params, query, body, caller: caller as never, req, res });
    const status = route.status ?? 200;
    if (status === 204) {
      res.status(204).end();
      return;
    }
    if (options.validateResponses && route.response) route.response.parse(result);
    res.status(status).json(result);
  };
}

export function mountRoutes(app: Express, routes: readonly RouteDefinition[], options: MountOptions): void {
  for (const route of routes) {
    const guard: RequestHandler = (req, _res, next) => {
      route.guard?.(req);
      next();
    };
    const parseJson = express.json({ limit: route.bodyLimit ?? options.bodyLimitBytes, type: () => true });
    app[route.method](route.path, guard, requireJson, parseJson, toHandler(route, options));
  }
}
