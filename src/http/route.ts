// Declares a route once — method, path, auth, zod schemas, handler — and runs it with the checks derived from that.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import { z } from 'zod';
import { validationError } from '../errors';
import type { TrustedProxies } from './proxies';

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
  session(req: IncomingMessage): Promise<UserCaller>;
  member(req: IncomingMessage, orgId: string, minimumRole: Role): Promise<MemberCaller>;
  apiKey(req: IncomingMessage): Promise<KeyCaller>;
  projectReader(req: IncomingMessage, projectId: string): Promise<ProjectCaller>;
}

type AnyObjectSchema = z.ZodType<Record<string, unknown>>;
/** What a route without params or query validates them with: no fields. */
type NoFields = z.ZodObject<Record<never, never>>;

/**
 * A body in media types other than JSON (OTLP's protobuf): decoded to what `body` validates; the response encoded
 * alike.
 */
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

/**
 * A success body streamed as it is produced (an export), in one of the route's `streamed` media types: written to the
 * response as it is read, so that neither side holds it whole.
 */
export class StreamedBody {
  constructor(
    readonly mediaType: string,
    readonly body: Readable,
    readonly headers: Record<string, string> = {},
  ) {}
}

/** The error statuses a route can answer; each has its response in the OpenAPI document. */
export type ErrorStatus = 400 | 401 | 403 | 404 | 409 | 413 | 415 | 429 | 503;

export interface RouteDefinition<
  A extends AuthRequirement = AuthRequirement,
  P extends AnyObjectSchema = AnyObjectSchema,
  Q extends AnyObjectSchema = AnyObjectSchema,
  B extends z.ZodType = z.ZodType,
  R extends z.ZodType = z.ZodType,
> {
  method: 'get' | 'post' | 'patch' | 'delete';
  /** With `:name` parameters: `/admin/orgs/:orgID`; matched in any letter case, with or without a trailing slash. */
  path: string;
  /**
   * The operation's name in the OpenAPI document, and so in the clients generated from it: `listRuns`,
   * `createAlertRule`.
   */
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
  /** The success body; omitted for 204 responses. With `streamed`, the shape of each record the stream holds. */
  response?: R;
  /**
   * The handler streams its success body (a StreamedBody) in one of these media types, each with what its bytes are
   * (for the OpenAPI document), instead of answering `response` as JSON.
   */
  streamed?: Record<string, { description: string; binary?: boolean }>;
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
  /** Runs before the body is read, for rate limits; throws an AppError to refuse. */
  guard?: (req: IncomingMessage, proxies: TrustedProxies) => void;
  handler(input: {
    params: z.infer<P>;
    query: z.infer<Q>;
    body: z.infer<B>;
    caller: CallerOf<A>;
    req: IncomingMessage;
    res: ServerResponse;
    proxies: TrustedProxies;
  }): Promise<z.input<R> | StreamedBody | void>;
}

/** Identity helper that fixes the generic parameters, so the handler's arguments are typed from the schemas. */
export function defineRoute<
  A extends AuthRequirement,
  P extends AnyObjectSchema = NoFields,
  Q extends AnyObjectSchema = NoFields,
  B extends z.ZodType = z.ZodUndefined,
  R extends z.ZodType = z.ZodVoid,
>(definition: RouteDefinition<A, P, Q, B, R>): RouteDefinition {
  return definition as unknown as RouteDefinition;
}

export interface RouteOptions {
  authenticator: Authenticator;
  /** Who a request's client is, past the proxies TRUST_PROXY trusts: for guards and handlers. */
  proxies: TrustedProxies;
  /** In tests every response is checked against its declared schema, so the OpenAPI document cannot drift. */
  validateResponses: boolean;
}

function identify(route: RouteDefinition, req: IncomingMessage, authenticator: Authenticator, params: Params) {
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

type Params = Record<string, unknown>;

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

/** What a request brings, as the server read it: still unvalidated. */
export interface RawInput {
  params: Params;
  query: unknown;
  /**
   * The parsed JSON body; or, for a route with a codec, the raw body and its media type, decoded once the caller is
   * known.
   */
  body: unknown;
  encoded?: { body: Buffer; mediaType: string };
}

/**
 * Serving a declared route once its body is read: path ids (a non-UUID is refused before any store is asked), the
 * caller, query and body validation, the handler, and in tests the check of the response against its schema.
 */
export async function runRoute(
  route: RouteDefinition,
  options: RouteOptions,
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
  const result = await route.handler({ params, query, body, caller, req, res, proxies: options.proxies });
  const status = route.status ?? 200;
  const checked = status !== 204 && options.validateResponses && route.response && !(result instanceof StreamedBody);
  if (checked) route.response!.parse(result);
  return { status, result };
}
