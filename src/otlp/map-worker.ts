// A worker thread of the mapping pool: maps the bodies it is sent (mapping.ts), in order, and answers each with the
// mapped export or the error it is answered with (an AppError's fields: a 400 travels as a 400; a bug as a 500,
// with its stack for the pool's log). The export's parts travel serialized (v8.serialize), each in a buffer handed
// over without a copy: the event loop decodes a part only when it records it, so it never holds a big export's
// mapped spans at once (a 10 MB export of 115,000 spans is 80 MiB of them).
import v8 from 'node:v8';
import { parentPort } from 'node:worker_threads';
import { AppError } from '../errors';
import { toAppError } from '../http/errors';
import { mapExport } from './mapping';

export interface MapRequest {
  id: number;
  body: Uint8Array;
  mediaType: string;
  nowMs: number;
}

type Mapped =
  | { id: number; parts: Uint8Array[]; rejections: string[] }
  | { id: number; error: Pick<AppError, 'status' | 'code' | 'message' | 'details' | 'headers'> & { stack?: string } };

/** An answer carries the worker's heap as it answers (V8's committed bytes), which the pool retires it by. */
export type MapAnswer = Mapped & { heapBytes: number };

parentPort!.on('message', ({ id, body, mediaType, nowMs }: MapRequest) => {
  let answer: Mapped;
  try {
    const { parts, rejections } = mapExport(
      Buffer.from(body.buffer, body.byteOffset, body.byteLength),
      mediaType,
      nowMs,
    );
    answer = { id, parts: [...parts].map((part) => v8.serialize(part)), rejections };
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
  parentPort!.postMessage(
    { ...answer, heapBytes: v8.getHeapStatistics().total_heap_size },
    'parts' in answer ? answer.parts.map((part) => part.buffer as ArrayBuffer) : [],
  );
});
