// Every request's id (X-Request-Id) and its one log line.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { OverloadError } from '../errors';
import { toAppError } from './errors';

const REQUEST_ID_PATTERN = /^[\w.:-]{1,128}$/;

/** The client's X-Request-Id when usable, else a new one; echoed in the response's X-Request-Id. */
export function assignRequestId(req: IncomingMessage, res: ServerResponse): string {
  const sent = req.headers['x-request-id'];
  const id = typeof sent === 'string' && REQUEST_ID_PATTERN.test(sent) ? sent : randomUUID();
  res.setHeader('X-Request-Id', id);
  return id;
}

/**
 * One line per request: a refusal (4xx, or load refused with 503) at warn, a failure (5xx) at error with its cause, a
 * success at debug only (at info, that line took ~11% of the thread serving run starts, more than the ingest handler
 * itself).
 */
export function logRequest(
  log: Logger,
  req: IncomingMessage,
  res: ServerResponse,
  requestId: string,
  startedAt: number,
  error?: unknown,
): void {
  // A failure is an error even when it came after the answer was sent (its status is then the answer's). Load
  // refused past a limit (503, OverloadError) is a refusal: under overload it is most answers, each without a stack.
  const refusedLoad = error instanceof OverloadError;
  const failed = error !== undefined && !refusedLoad && toAppError(error).status >= 500;
  const level = failed || (res.statusCode >= 500 && !refusedLoad) ? 'error' : res.statusCode >= 400 ? 'warn' : 'debug';
  if (!log.isLevelEnabled(level)) return;
  const line = {
    req: { id: requestId, method: req.method, url: req.url },
    res: { statusCode: res.statusCode },
    responseTime: Date.now() - startedAt,
    ...(failed ? { err: error } : {}),
  };
  log[level](line, error === undefined ? 'request completed' : 'request errored');
}
