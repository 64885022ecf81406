// The lean transport: routes declared `transport: 'lean'` served straight from node:http, every other request by express.
// Express's middleware chain (router, body-parser, pino-http's per-request logging) costs more than the ingest
// handlers themselves; this serves the same declarations with the same checks, errors and order of checks.
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import querystring from 'node:querystring';
import type { Logger } from 'pino';
import { errorBody, malformedJson, payloadTooLarge, toAppError } from './errors';
import { assignRequestId, logLevelFor } from './request-log';
import { hasBody, runRoute, type MountOptions, type RouteDefinition } from './route';

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
  const source = path.split('/').map((segment) => {
    if (!segment.startsWith(':')) return segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    paramNames.push(segment.slice(1));
    return '([^/]+)';
  }).join('/');
  return { pattern: new RegExp(`^${source}/?$`, 'i'), paramNames };
}

function toLeanRoute(route: RouteDefinition, defaultBodyLimit: number): LeanRoute {
  // A guard reads express's request (req.ip); the declaration's types already forbid one on a lean route.
  if (route.guard) throw new Error(`${route.method} ${route.path}: a lean route takes no guard`);
  return { route, method: route.method.toUpperCase(), ...compilePath(route.path), bodyLimit: route.bodyLimit ?? defaultBodyLimit };
}

// The request shapes this server reads itself: JSON in UTF-8, not compressed. Anything else (a gzip body, another
// charset or media type) goes to express, which decodes it or answers 415 as for any route.
const PLAIN_JSON = /^application\/json\s*(;\s*charset="?utf-8"?\s*)?$/i;

function isPlainJson(req: IncomingMessage): boolean {
  const encoding = req.headers['content-encoding'];
  if (encoding !== undefined && encoding.toLowerCase() !== 'identity') return false;
  return !hasBody(req) || PLAIN_JSON.test(req.headers['content-type'] ?? '');
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
  res.writeHead(status, { ...headers, 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(json) }).end(json);
}

function splitUrl(url: string): { path: string; search: string } {
  const question = url.indexOf('?');
  return question < 0 ? { path: url, search: '' } : { path: url.slice(0, question), search: url.slice(question + 1) };
}

export function leanListener(routes: readonly RouteDefinition[], options: LeanOptions): RequestListener {
  const { log, fallback } = options;
  const leanRoutes = routes.filter((route) => route.transport === 'lean').map((route) => toLeanRoute(route, options.bodyLimitBytes));

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
      req: { id, method: req.method, url: req.url }, res: { statusCode: res.statusCode }, responseTime: Date.now() - startedAt,
      ...(failed ? { err: error } : {}),
    };
    log[level](line, error === undefined ? 'request completed' : 'request errored');
  }

  async function serve(lean: LeanRoute, match: RegExpExecArray, search: string, req: IncomingMessage, res: ServerResponse) {
    const startedAt = Date.now();
    const requestId = assignRequestId(req, res);
    try {
      // The same order of checks as on express: path decoding, body size and JSON, then runRoute's.
      const params = Object.fromEntries(lean.paramNames.map((name, i) => [name, decodeURIComponent(match[i + 1])]));
      const body = parseJson(await readBody(req, lean.bodyLimit));
      const { status, result } = await runRoute(lean.route, options, { params, query: querystring.parse(search), body }, req, res);
      send(res, status, status === 204 ? undefined : result);
      logRequest(req, res, requestId, startedAt);
    } catch (error) {
      const mapped = toAppError(error);
      if (!res.headersSent) send(res, mapped.status, errorBody(mapped, requestId), mapped.headers);
      logRequest(req, res, requestId, startedAt, error);
    }
  }

  return (req, res) => {
    if (isPlainJson(req)) {
      const { path, search } = splitUrl(req.url ?? '/');
      for (const lean of leanRoutes) {
        const match = lean.method === req.method ? lean.pattern.exec(path) : null;
        if (match) {
          void serve(lean, match, search, req, res);
          return;
        }
      }
    }
    fallback(req, res);
  };
}
