// A worker thread of the mapping pool: maps the bodies it is sent (mapping.ts), in order, and answers each with the
// mapped export or the error it is answered with (an AppError's fields: a 400 travels as a 400; a bug as a 500,
// with its stack for the pool's log).
import { parentPort } from 'node:worker_threads';
import { AppError } from '../errors';
import { toAppError } from '../http/errors';
import { mapExport, type MappedExport } from './mapping';

export interface MapRequest {
  id: number;
  body: Uint8Array;
  mediaType: string;
  nowMs: number;
}

export type MapAnswer =
  | { id: number; mapped: MappedExport }
  | { id: number; error: Pick<AppError, 'status' | 'code' | 'message' | 'details' | 'headers'> & { stack?: string } };

parentPort!.on('message', ({ id, body, mediaType, nowMs }: MapRequest) => {
  let answer: MapAnswer;
  try {
    answer = { id, mapped: mapExport(Buffer.from(body.buffer, body.byteOffset, body.byteLength), mediaType, nowMs) };
  } catch (caught) {
    const { status, code, message, details, headers } = toAppError(caught);
    answer = {
      id,
      error: {
        status,
        code,
        message,
        details,
        headers,
        stack: caught instanceof AppError ? undefined : String((caught as Error)?.stack ?? caught),
      },
    };
  }
  parentPort!.postMessage(answer);
});
