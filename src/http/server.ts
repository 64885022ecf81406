// The service's request path, from node:http: every request enters `handleRequest` (its id, its one log line). A
// declared route is served here — its path matched, its guard, its body read (body.ts), then `runRoute` (route.ts) —
// and any other request goes to the fallback (express, serving the dashboard), whose leftovers come back as a 404.
import { randomUUID } from 'node:crypto';
import {
  maxHeaderSize,
  STATUS_CODES,
  type IncomingMessage,
  type RequestListener,
  type ServerResponse,
} from 'node:http';
import querystring from 'node:querystring';
import { pipeline, type Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { AppError, payloadTooLarge } from '../errors';
import { type BodyCharge, type ByteBudget, type Lane } from './admission';
import { checkJsonMediaType, codecMediaType, parseJson, readBody, type BodyBounds } from './body';
import { errorBody, toAppError } from './errors';
import { assignRequestId, logRequest } from './request-log';
import { runRoute, StreamedBody, type RawInput, type RouteDefinition, type RouteOptions } from './route';

/**
 * Serves a request no declared route takes, and calls `next` with what it does not serve (no error: a 404) or
 * with its failure. An express app is one: called with a third argument, it hands over what its router leaves.
 */
export type Fallback = (req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void) => void;

export interface ServerOptions extends RouteOptions {
  /** The limit of a request body (decompressed) when its route declares none. */
  bodyLimitBytes: number;
  log: Logger;
  fallback: Fallback;
  /** The lane a route's requests wait in (reads, ingest); none for the others (health, accounts, settings). */
  laneOf?: (route: RouteDefinition) => Lane | undefined;
  /** The budget of request-body bytes held at once, across requests. */
  bodyBudget?: ByteBudget;
}

interface CompiledRoute {
  route: RouteDefinition;
  pattern: RegExp;
  paramNames: string[];
  bodyLimit: number;
}

/** A declared path (`/runs/:runID/steps`) as a pattern over the raw path: any letter case, optional trailing slash. */
function compilePath(path: string): { pattern: RegExp; paramNames: string[] } {
  const paramNames: string[] = [];
  const source = path
    .split('/')
    .map((segment) => {
      if (!segment.startsWith(':')) return segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      paramNames.push(segment.slice(1));
      return '([^/]+)';
    })
    .join('/');
  return { pattern: new RegExp(`^${source}/?$`, 'i'), paramNames };
}

/** The routes by method (upper case, as node reports it), in the order declared: the first that matches serves. */
function compileRoutes(routes: readonly RouteDefinition[], defaultBodyLimit: number): Map<string, CompiledRoute[]> {
  const byMethod = new Map<string, CompiledRoute[]>();
  for (const route of routes) {
    const method = route.method.toUpperCase();
    const sameMethod = byMethod.get(method) ?? [];
    sameMethod.push({ route, ...compilePath(route.path), bodyLimit: route.bodyLimit ?? defaultBodyLimit });
    byMethod.set(method, sameMethod);
  }
  return byMethod;
}

function splitUrl(target: string): { path: string; search: string } {
  // A request target in absolute form (`http://host/path`, RFC 9112 §3.2.2) is routed by its path, as any other.
  const url = target.startsWith('/') ? target : absolutePath(target);
  const question = url.indexOf('?');
  return question < 0 ? { path: url, search: '' } : { path: url.slice(0, question), search: url.slice(question + 1) };
}

function absolutePath(target: string): string {
  try {
    const { pathname, search } = new URL(target);
    return pathname + search;
  } catch {
    return target;
  }
}

function decodeParams(names: string[], match: RegExpExecArray): Record<string, string> {
  try {
    return Object.fromEntries(names.map((name, i) => [name, decodeURIComponent(match[i + 1])]));
  } catch {
    throw new AppError(400, 'invalid_id', 'a path parameter is not valid percent-encoding');
  }
}

/** A JSON answer; none for a 204. (Node itself sends no body to a HEAD request, as HTTP wants.) */
function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (body === undefined) {
    res.writeHead(status, headers).end();
    return;
  }
  const json = JSON.stringify(body);
  res
    .writeHead(status, {
      ...headers,
      'Content-Type': 'application/json; charset=utf-8',
      'Content-Length': Buffer.byteLength(json),
    })
    .end(json);
}

function sendEncoded(res: ServerResponse, status: number, body: Buffer, mediaType: string): void {
  res.writeHead(status, { 'Content-Type': mediaType, 'Content-Length': body.length }).end(body);
}

/**
 * A streamed body, written as it is read: the response's backpressure pauses the source. A failure once the headers
 * are out cuts the response, so the client sees it failed; `done` is told when the body has ended either way.
 */
function sendStream(res: ServerResponse, status: number, streamed: StreamedBody, done: (error?: unknown) => void) {
  res.writeHead(status, { ...streamed.headers, 'Content-Type': streamed.mediaType });
  pipeline(streamed.body, res, (error) => {
    if (error) res.destroy();
    done(error ?? undefined);
  });
}

function sendError(res: ServerResponse, error: unknown, requestId: string): void {
  // Once the headers are out, an error body cannot follow: the response is cut, so the client sees it failed.
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const mapped = toAppError(error);
  send(res, mapped.status, errorBody(mapped, requestId), mapped.headers);
}

/** The charge of a body refused before it is read: no byte of it fits. */
const REFUSED: BodyCharge = { grow: () => false, release: () => undefined };

const noSuchRoute = () => new AppError(404, 'not_found', 'no such route');

export function createRequestListener(routes: readonly RouteDefinition[], options: ServerOptions): RequestListener {
  const { log, fallback, proxies, bodyBudget } = options;
  const routesByMethod = compileRoutes(routes, options.bodyLimitBytes);
  const laneOf = new Map(routes.map((route) => [route, options.laneOf?.(route)]));

  /**
   * The body's bounds: its route's limit, and its charge against the budget, released once the answer is sent. A
   * Content-Length that does not fit the budget is refused at once: its body is read off and dropped, never held.
   */
  function boundsOf(req: IncomingMessage, res: ServerResponse, limit: number): BodyBounds {
    if (!bodyBudget) return { limit };
    const declared = Number(req.headers['content-length'] ?? 0);
    const charge = bodyBudget.open(Number.isSafeInteger(declared) && declared <= limit ? declared : 0);
    if (!charge) return { limit, charge: REFUSED };
    res.once('close', charge.release);
    return { limit, charge };
  }

  /** The raw input of a declared route: path parameters, query, and the body in the form the route takes. */
  async function readInput(
    compiled: CompiledRoute,
    match: RegExpExecArray,
    search: string,
    req: IncomingMessage,
    res: ServerResponse,
  ): Promise<RawInput> {
    const { route, bodyLimit } = compiled;
    // The order of checks clients know: path decoding, the guard, the media type, the body's size and syntax.
    const params = decodeParams(compiled.paramNames, match);
    route.guard?.(req, proxies);
    const query = querystring.parse(search);
    if (!route.codec) {
      checkJsonMediaType(req);
      return { params, query, body: parseJson(await readBody(req, boundsOf(req, res, bodyLimit))) };
    }
    const mediaType = codecMediaType(req, route.codec);
    const body = (await readBody(req, boundsOf(req, res, bodyLimit))) ?? Buffer.alloc(0);
    return { params, query, body: undefined, encoded: { body, mediaType } };
  }

  async function serveRoute(
    compiled: CompiledRoute,
    match: RegExpExecArray,
    search: string,
    req: IncomingMessage,
    res: ServerResponse,
    requestId: string,
    startedAt: number,
  ) {
    // A laned route waits for its turn (or is refused, 503) before anything of it is read.
    const lane = laneOf.get(compiled.route);
    let leaveLane: (() => void) | undefined;
    try {
      leaveLane = await lane?.enter();
      const raw = await readInput(compiled, match, search, req, res);
      const run = () => runRoute(compiled.route, options, raw, req, res);
      const { status, result } = await (lane ? lane.scope(startedAt, run) : run());
      const { codec } = compiled.route;
      if (result instanceof StreamedBody) {
        sendStream(res, status, result, (error) => logRequest(log, req, res, requestId, startedAt, error));
        return;
      }
      if (codec && raw.encoded) {
        const { mediaType } = raw.encoded;
        sendEncoded(res, status, codec.encode(result, mediaType), mediaType);
      } else send(res, status, status === 204 ? undefined : result);
      logRequest(log, req, res, requestId, startedAt);
    } catch (error) {
      sendError(res, error, requestId);
      logRequest(log, req, res, requestId, startedAt, error);
    } finally {
      leaveLane?.();
    }
  }

  function serveFallback(req: IncomingMessage, res: ServerResponse, requestId: string, startedAt: number) {
    let failure: unknown;
    res.once('close', () => logRequest(log, req, res, requestId, startedAt, failure));
    fallback(req, res, (error) => {
      failure = error ?? noSuchRoute();
      sendError(res, failure, requestId);
    });
  }

  /** Every request starts here: a declared route is served, anything else goes to the fallback. */
  return function handleRequest(req, res) {
    const startedAt = Date.now();
    const requestId = assignRequestId(req, res);
    const { path, search } = splitUrl(req.url ?? '/');
    // A HEAD request is served by the GET route of its path, as express did.
    const candidates = routesByMethod.get(req.method === 'HEAD' ? 'GET' : (req.method ?? '')) ?? [];
    for (const compiled of candidates) {
      const match = compiled.pattern.exec(path);
      if (match) {
        void serveRoute(compiled, match, search, req, res, requestId, startedAt);
        return;
      }
    }
    serveFallback(req, res, requestId, startedAt);
  };
}

/** What node's HTTP parser refuses before any listener sees a request, by its error code; anything else is a 400. */
const clientErrors: Record<string, () => AppError> = {
  HPE_HEADER_OVERFLOW: () =>
    new AppError(431, 'request_header_too_large', `the request line and headers are over ${maxHeaderSize} bytes`),
  HPE_CHUNK_EXTENSIONS_OVERFLOW: payloadTooLarge,
  ERR_HTTP_REQUEST_TIMEOUT: () => new AppError(408, 'request_timeout', 'the request was not received in time'),
};
const malformedRequest = () => new AppError(400, 'malformed_request', 'the request is not valid HTTP');

/**
 * The server's `clientError` listener: what node would answer bare (431, 408, 400), in the contract's error body,
 * then the connection closes. No request was parsed, so its request id is a new one. A socket that cannot take an
 * answer, or whose response to an earlier request is being written (as node itself decides), is destroyed.
 */
export function answerClientError(error: Error & { code?: string }, socket: Duplex): void {
  const answering = (socket as Duplex & { _httpMessage?: ServerResponse })._httpMessage;
  if (error.code === 'ECONNRESET' || !socket.writable || answering?.headersSent) {
    socket.destroy();
    return;
  }
  const mapped = (clientErrors[error.code ?? ''] ?? malformedRequest)();
  const requestId = randomUUID();
  const json = JSON.stringify(errorBody(mapped, requestId));
  const answer = [
    `HTTP/1.1 ${mapped.status} ${STATUS_CODES[mapped.status]}`,
    'Content-Type: application/json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(json)}`,
    `X-Request-Id: ${requestId}`,
    'Connection: close',
    '',
    json,
  ].join('\r\n');
  // Closed once the answer is out, whatever the client still sends (its parser has failed).
  socket.end(answer, () => socket.destroy());
}
