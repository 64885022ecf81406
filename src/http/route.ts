// Declares a route once — method, path, auth, zod schemas, handler — and mounts it with validation derived from that.
import type { IncomingMessage, ServerResponse } from 'node:http';
import express, { type Express, type Request, type RequestHandler, type Response } from 'express';
import { z } from 'zod';
import { AppError, validationError } from '../errors';

export type Role = 'viewer' | 'member' | 'admin';

export type AuthRequirement =
  { kind: 'public' } | { kind: 'session' } | { kind: 'org'; role: Role } | { kind: 'apiKey' } | { kind: 'projectRead' };

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

/** A body in media types other than JSON (OTLP's protobuf): decoded to what `body` validates; the response encoded alike. */
export interface BodyCodec {
  /** The media types taken, lower case, without parameters; any other gets 415. */
  mediaTypes: readonly string[];
  /**
   * The body as the value `body` validates; throws (or rejects with) a 400 AppError when it does not decode. It may
   * work off the event loop and resolve later (OTLP decodes in a worker thread).
   */
  decode(body: Buffer, mediaType: string): unknown;
  /** The success response in the request's media type. */
  encode(result: unknown, mediaType: string): Buffer;
}

/** The error statuses a route can answer; each has its response in the OpenAPI document. */
export type ErrorStatus = 400 | 401 | 403 | 404 | 409 | 413 | 415 | 429 | 503;

/** The transports a route is served by: express always; hot routes also by the lean node:http server (http/lean-server.ts). */
export type Transport = 'express' | 'lean';

export interface RouteDefinition<
  A extends AuthRequirement = AuthRequirement,
  P extends AnyObjectSchema = AnyObjectSchema,
  Q extends AnyObjectSchema = AnyObjectSchema,
  B extends z.ZodType = z.ZodType,
  R extends z.ZodType = z.ZodType,
  T extends Transport = Transport,
> {
  method: 'get' | 'post' | 'patch' | 'delete';
  /** Express-style path: `/admin/orgs/:orgID`. */
  path: string;
  /** The operation's name in the OpenAPI document, and so in the clients generated from it: `listRuns`, `createAlertRule`. */
  operationId: string;
  summary: string;
  tag: string;
  auth: A;
  params?: P;
  query?: Q;
  body?: B;
  /**
   * The request body as clients send it, for the OpenAPI document, when `body` validates something else: what a
   * codec decoded (having validated the body against this schema itself), or items checked one by one.
   */
  documentedBody?: z.ZodType;
  /** The success body; omitted for 204 responses. */
  response?: R;
  status?: 200 | 201 | 204;
  /** Headers of the success response besides X-Request-Id (which every response has), for the OpenAPI document. */
  responseHeaders?: Record<string, z.ZodType>;
  /**
   * Error statuses the handler answers beyond those the declaration implies (openapi.ts): a conflict's 409, a
   * failed login's 401, a public route's store outage 503.
   */
  errors?: readonly ErrorStatus[];
  /** Body size limit in bytes (of the decompressed body); defaults to the service's general limit. */
  bodyLimit?: number;
  /** Bodies in other media types than JSON, and responses in the request's. */
  codec?: BodyCodec;
  /**
   * 'lean': also served by the lean node:http server, without express's middleware; its handler then sees node's own
   * request and response, and it takes no guard. Unusual requests to it (compressed bodies, other charsets or media
   * types) still go to express.
   */
  transport?: T;
  /** Runs before anything else, for rate limits; throws an AppError to refuse. */
  guard?: T extends 'lean' ? never : (req: Request) => void;
  handler(input: {
    params: z.infer<P>;
    query: z.infer<Q>;
    body: z.infer<B>;
    caller: CallerOf<A>;
    req: T extends 'lean' ? IncomingMessage : Request;
    res: T extends 'lean' ? ServerResponse : Response;
  }): Promise<z.input<R> | void>;
}

/** Identity helper that fixes the generic parameters, so the handler's arguments are typed from the schemas. */
export function defineRoute<
  A extends AuthRequirement,
  P extends AnyObjectSchema = z.ZodObject<{}>,
  Q extends AnyObjectSchema = z.ZodObject<{}>,
  B extends z.ZodType = z.ZodUndefined,
  R extends z.ZodType = z.ZodVoid,
  T extends Transport = 'express',
>(definition: RouteDefinition<A, P, Q, B, R, T>): RouteDefinition {
  return definition as unknown as RouteDefinition;
}

export interface MountOptions {
  authenticator: Authenticator;
  bodyLimitBytes: number;
  /** In tests every response is checked against its declared schema, so the OpenAPI document cannot drift. */
  validateResponses: boolean;
}

const noBodyMethods = new Set(['GET', 'HEAD', 'DELETE']);

/** The request's media type when the codec takes it (lower case, without parameters); else undefined. */
export function codecMediaType(req: IncomingMessage, codec: BodyCodec): string | undefined {
  const mediaType = (req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
  return codec.mediaTypes.includes(mediaType) ? mediaType : undefined;
}

export function hasBody(req: IncomingMessage): boolean {
  return req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
}

const requireJson: RequestHandler = (req, _res, next) => {
  if (!noBodyMethods.has(req.method) && hasBody(req) && !req.is('application/json')) {
    next(new AppError(415, 'unsupported_media_type', 'request body must be application/json'));
    return;
  }
  next();
};

async function identify(
  route: RouteDefinition,
  incoming: IncomingMessage,
  authenticator: Authenticator,
  params: Record<string, unknown>,
) {
  // The authenticator reads the request's headers only (auth/authenticator.ts), which node's request carries as
  // express's does; so the lean server's requests are recognised by the same code.
  const req = incoming as Request;
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

function parseOrThrow<T>(
  schema: z.ZodType<T> | undefined,
  value: unknown,
  code: 'validation_failed' | 'invalid_id',
  where: string[],
): T {
  if (!schema) return {} as T;
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw validationError(code, parsed.error.issues, where);
  return parsed.data;
}

/** What a request brings, as its transport found it: still unvalidated. */
export interface RawInput {
  params: unknown;
  query: unknown;
  /** The parsed JSON body; or, for a route with a codec, the raw body and its media type, decoded once the caller is known. */
  body: unknown;
  encoded?: { body: Buffer; mediaType: string };
}

/**
 * Serving a route, the same on both transports: path ids (a non-UUID is refused before any store is asked), the
 * caller, query and body validation, the handler, and in tests the check of the response against its schema.
 */
export async function runRoute(
  route: RouteDefinition,
  options: MountOptions,
  raw: RawInput,
  req: IncomingMessage,
  res: ServerResponse,
) {
  const params = parseOrThrow(route.params, raw.params, 'invalid_id', []);
  const caller = await identify(route, req, options.authenticator, params);
  const query = parseOrThrow(route.query, raw.query, 'validation_failed', []);
  // A codec's decoding is work (OTLP's, a worker's): only a known caller's body is decoded.
  const sent =
    raw.encoded && route.codec ? await route.codec.decode(raw.encoded.body, raw.encoded.mediaType) : raw.body;
  const body = route.body ? parseOrThrow(route.body, sent, 'validation_failed', []) : undefined;
  // A lean route's handler is typed for node's request and response, an express route's for express's.
  const result = await route.handler({
    params,
    query,
    body,
    caller: caller as never,
    req: req as never,
    res: res as never,
  });
  const status = route.status ?? 200;
  if (status !== 204 && options.validateResponses && route.response) route.response.parse(result);
  return { status, result };
}

function toHandler(route: RouteDefinition, options: MountOptions): RequestHandler {
  return async (req, res) => {
    const { status, result } = await runRoute(route, options, req, req, res);
    if (status === 204) {
      res.status(204).end();
      return;
    }
    res.status(status).json(result);
  };
}

/** A route with a codec: its body read raw (and decompressed), decoded for its media type once the caller is known, answered in the same. */
function toCodecHandler(route: RouteDefinition, codec: BodyCodec, options: MountOptions): RequestHandler {
  return async (req, res) => {
    const mediaType = codecMediaType(req, codec);
    if (!mediaType) {
      throw new AppError(415, 'unsupported_media_type', `request body must be one of ${codec.mediaTypes.join(', ')}`);
    }
    const encoded = { body: Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0), mediaType };
    const { status, result } = await runRoute(
      route,
      options,
      { params: req.params, query: req.query, body: undefined, encoded },
      req,
      res,
    );
    res.status(status).type(mediaType).send(codec.encode(result, mediaType));
  };
}

export function mountRoutes(app: Express, routes: readonly RouteDefinition[], options: MountOptions): void {
  for (const route of routes) {
    const guard: RequestHandler = (req, _res, next) => {
      route.guard?.(req);
      next();
    };
    const limit = route.bodyLimit ?? options.bodyLimitBytes;
    if (route.codec) {
      app[route.method](
        route.path,
        guard,
        express.raw({ limit, type: () => true }),
        toCodecHandler(route, route.codec, options),
      );
      continue;
    }
    app[route.method](
      route.path,
      guard,
      requireJson,
      express.json({ limit, type: () => true }),
      toHandler(route, options),
    );
  }
}
