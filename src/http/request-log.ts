// What both transports (express with pino-http, and the lean server) agree on: request ids and the level of a request's log line.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Level } from 'pino';

const REQUEST_ID_PATTERN = /^[\w.:-]{1,128}$/;

/** The client's X-Request-Id when usable, else a new one; echoed in the response's X-Request-Id. */
export function assignRequestId(req: IncomingMessage, res: ServerResponse): string {
  const sent = req.headers['x-request-id'];
  const id = typeof sent === 'string' && REQUEST_ID_PATTERN.test(sent) ? sent : randomUUID();
  res.setHeader('X-Request-Id', id);
  return id;
}

/** 5xx (or a failure with no status) at error, 4xx at warn, the rest at `success`. */
export function logLevelFor(statusCode: number, failed: boolean, success: Level): Level {
  if (failed || statusCode >= 500) return 'error';
  return statusCode >= 400 ? 'warn' : success;
}
