// The lean transport: routes declared `transport: 'lean'` served straight from node:http, every other request by express.
// Express's middleware chain (router, body-parser, pino-http's per-request logging) costs more than the ingest
// handlers themselves; this serves the same declarations with the same checks, errors and order of checks.
import { randomUUID } from 'node:crypto';
import {
  maxHeaderSize,
  STATUS_CODES,
  type IncomingMessage,
  type RequestListener,
  type ServerResponse,
} from 'node:http';
import querystring from 'node:querystring';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { AppError, malformedJson, payloadTooLarge } from '../errors';
import { errorBody, toAppError } from './errors';
import { assignRequestId, logLevelFor } from './request-log';
import { codecMediaType, hasBody, runRoute, type MountOptions, type RouteDefinition } from './route';

export interface LeanOptions extends MountOptions {
  log: Logger;
  /** Serves every request the lean server does not: the express app. */
  fallback: RequestListener;
}

interface LeanRoute {
  route: RouteDefinition;
  /** Upper-case, as node reports it. */
  method: string;
  pattern: RegExp;
  paramNames: string[];
  bodyLimit: number;
}

/** An express-style path (`/runs/:runID/steps`) as a pattern over the raw path: case-insensitive, optional trailing slash, as express matches. */
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

function toLeanRoute(route: RouteDefinition, defaultBodyLimit: number): LeanRoute {
  // A guard reads express's request (req.ip); the declaration's types already forbid one on a lean route.
  if (route.guard) throw new Error(`${route.method} ${route.path}: a lean route takes no guard`);
  return {
    route,
    method: route.method.toUpperCase(),
    ...compilePath(route.path),
    bodyLimit: route.bodyLimit ?? defaultBodyLimit,
  };
}

// The request shapes this server reads itself: JSON in UTF-8, or a media type of the route's codec, not compressed.
// Anything else (a gzip body, another charset or media type) goes to express, which decodes it or answers 415.
const PLAIN_JSON = /^application\/json\s*(;\s*charset="?utf-8"?\s*)?$/i;

const isUncompressed = (req: IncomingMessage) => {
  const encoding = req.headers['content-encoding'];
  return encoding === undefined || encoding.toLowerCase() === 'identity';
};

/** The media type this server reads the request's body as: JSON, one of the route's codec, or none it reads. */
function mediaTypeOf(req: IncomingMessage, route: RouteDefinition): string | undefined {
  if (!isUncompressed(req)) return undefined;
  if (route.codec) return codecMediaType(req, route.codec);
  return !hasBody(req) || PLAIN_JSON.test(req.headers['content-type'] ?? '') ? 'application/json' : undefined;
}

/** The body, or undefined when there is none. Over the limit, the rest is read off (keeping the connection usable) and 413 follows. */
function readBody(req: IncomingMessage, limit: number): Promise<Buffer | undefined> {
  if (!hasBody(req)) return Promise.resolve(undefined);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = Number(req.headers['content-length'] ?? 0) > limit;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      tooLarge ||= size > limit;
      if (!tooLarge) chunks.push(chunk);
    });
    req.on('end', () => (tooLarge ? reject(payloadTooLarge()) : resolve(Buffer.concat(chunks, size))));
    req.on('error', reject);
  });
}

/** As express.json() in strict mode: an empty body is `{}`, and only an object or an array is JSON here. */
function parseJson(body: Buffer | undefined): unknown {
  if (body === undefined) return undefined;
  let text = body.toString('utf8');
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  if (text.length === 0) return {};
  const first = /^[\x20\x09\x0a\x0d]*(.)/s.exec(text)?.[1];
  if (first !== '{' && first !== '[') throw malformedJson();
  try {
    return JSON.parse(text);
  } catch {
    throw malformedJson();
  }
}

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

function splitUrl(url: string): { path: string; search: string } {
  const question = url.indexOf('?');
  return question < 0 ? { path: url, search: '' } : { path: url.slice(0, question), search: url.slice(question + 1) };
}

export function leanListener(routes: readonly RouteDefinition[], options: LeanOptions): RequestListener {
  const { log, fallback } = options;
  const leanRoutes = routes
    .filter((route) => route.transport === 'lean')
    .map((route) => toLeanRoute(route, options.bodyLimitBytes));

  /**
   * One line for every request that failed, in pino-http's shape, at pino-http's levels (4xx warn, 5xx error with
   * its cause). A success is logged at debug only: on starts, pino-http's line per request took ~11% of the thread.
   */
  function logRequest(req: IncomingMessage, res: ServerResponse, id: string, startedAt: number, error?: unknown): void {
    // A failure is an error even when it came after the answer was sent (its status is then the answer's).
    const failed = error !== undefined && toAppError(error).status >= 500;
    const level = logLevelFor(res.statusCode, failed, 'debug');
    if (!log.isLevelEnabled(level)) return;
    const line = {
      req: { id, method: req.method, url: req.url },
      res: { statusCode: res.statusCode },
      responseTime: Date.now() - startedAt,
      ...(failed ? { err: error } : {}),
    };
    log[level](line, error === undefined ? 'request completed' : 'request errored');
  }

  async function serve(
    lean: LeanRoute,
    mediaType: string,
    match: RegExpExecArray,
    search: string,
    req: IncomingMessage,
    res: ServerResponse,
  ) {
    const startedAt = Date.now();
    const requestId = assignRequestId(req, res);
    try {
      // The same order of checks as on express: path decoding, body size and decoding, then runRoute's.
      const params = Object.fromEntries(lean.paramNames.map((name, i) => [name, decodeURIComponent(match[i + 1])]));
      const { codec } = lean.route;
      const raw = await readBody(req, lean.bodyLimit);
      const input = codec
        ? { body: undefined, encoded: { body: raw ?? Buffer.alloc(0), mediaType } }
        : { body: parseJson(raw) };
      const { status, result } = await runRoute(
        lean.route,
        options,
        { params, query: querystring.parse(search), ...input },
        req,
        res,
      );
      if (codec) sendEncoded(res, status, codec.encode(result, mediaType), mediaType);
      else send(res, status, status === 204 ? undefined : result);
      logRequest(req, res, requestId, startedAt);
    } catch (error) {
      const mapped = toAppError(error);
      if (!res.headersSent) send(res, mapped.status, errorBody(mapped, requestId), mapped.headers);
      logRequest(req, res, requestId, startedAt, error);
    }
  }

  return (req, res) => {
    const { path, search } = splitUrl(req.url ?? '/');
    for (const lean of leanRoutes) {
      const match = lean.method === req.method ? lean.pattern.exec(path) : null;
      const mediaType = match ? mediaTypeOf(req, lean.route) : undefined;
      if (match && mediaType) {
        void serve(lean, mediaType, match, search, req, res);
        return;
      }
    }
    fallback(req, res);
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
