// Maps exports off the event loop: decoding, validating and mapping a span costs about as much as everything the
// event loop does for it afterwards, so worker threads take that part and the event loop keeps the assembly and
// the ingest log. With no workers (OTLP_DECODE_WORKERS=0) it maps on the event loop.
import path from 'node:path';
import v8 from 'node:v8';
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import { AppError } from '../errors';
import type { MapAnswer, MapRequest } from './map-worker';
import { mapExport, type MappedExport, type MappedTrace } from './mapping';

interface Pending {
  request: MapRequest;
  resolve(mapped: MappedExport): void;
  reject(error: Error): void;
}

interface Slot {
  worker: Worker;
  /** The requests it was sent and has not answered, oldest first: it works on them in that order. */
  held: number[];
  /** Ends a worker stuck on its oldest request or, with nothing held, retires one left with a big heap. */
  timer: NodeJS.Timeout | undefined;
  /** Its heap (V8's committed bytes) as of its last answer. */
  heapBytes: number;
}

// Built, the worker is the JavaScript beside this file; under tsx or jest it is the TypeScript source, which the
// thread loads through tsx's require hook (a dev dependency, as those runners are), resolved from here.
// Its heap is capped (OTLP_WORKER_HEAP_MB): an export too big for it ends the worker, and is answered 503, rather than
// the process running out of memory.
const WORKER_FILE = path.join(__dirname, `map-worker${path.extname(__filename)}`);
const startThread = (heapMb: number) => {
  const resourceLimits = { maxOldGenerationSizeMb: heapMb };
  return path.extname(WORKER_FILE) === '.ts'
    ? new Worker(`require(${JSON.stringify(require.resolve('tsx/cjs'))}); require(${JSON.stringify(WORKER_FILE)});`, {
        eval: true,
        resourceLimits,
      })
    : new Worker(WORKER_FILE, { resourceLimits });
};

/** A worker's serialized parts, each decoded when taken and dropped then (V8 frees its bytes when it collects it). */
function* decodedInTurn(parts: Uint8Array[]): Generator<MappedTrace[]> {
  for (let i = 0; i < parts.length; i += 1) {
    const part = v8.deserialize(parts[i]) as MappedTrace[];
    parts[i] = new Uint8Array(0);
    yield part;
  }
}

/** A body that takes a worker longer than this is taken as stuck: the worker is ended and replaced. */
const DEADLINE_MS = 30_000;
/** A worker's heap when none is configured. */
const DEFAULT_HEAP_MB = 512;
/**
 * When a worker is retired: once it has held nothing for `idleMs` with a heap past `heapBytes`; the next export starts
 * another. V8 keeps the heap an export grew long after its objects are garbage (~220 MiB after one of 115,000 spans,
 * ~160 after a stream of small ones, against ~30 for a fresh worker), and does not give it back to an idle thread:
 * after a big export, ending the worker gives it back while the event loop goes on assembling and storing that
 * export's runs for seconds. A stream whose exports come less than `idleMs` apart keeps its worker (a start costs
 * ~130 ms of CPU), and so does a worker whose heap stayed small.
 */
export interface Retirement {
  heapBytes: number;
  idleMs: number;
}
const RETIREMENT: Retirement = { heapBytes: 64 * 1024 * 1024, idleMs: 1000 };

const unavailable = (message: string) => new AppError(503, 'unavailable', message, [], { 'Retry-After': '1' });

export class MappingPool {
  private readonly slots: (Slot | undefined)[];
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;
  private closed = false;

  constructor(
    private readonly size: number,
    private readonly log: Logger,
    private readonly heapMb = DEFAULT_HEAP_MB,
    private readonly retirement = RETIREMENT,
  ) {
    this.slots = new Array(size).fill(undefined);
  }

  /** The export mapped, in a worker (started when first needed) or, with none, here. */
  map(body: Buffer, mediaType: string, nowMs: number): Promise<MappedExport> {
    if (this.size === 0) return Promise.resolve().then(() => mapExport(body, mediaType, nowMs));
    if (this.closed) return Promise.reject(unavailable('the service is stopping'));
    const request: MapRequest = { id: this.nextId++, body, mediaType, nowMs };
    return new Promise((resolve, reject) => {
      this.pending.set(request.id, { request, resolve, reject });
      this.send(request);
    });
  }

  private send(request: MapRequest): void {
    const index = request.id % this.size;
    // A slot whose worker is gone gets a new one here, when it is needed: never in a loop of failing starts.
    const slot = (this.slots[index] ??= this.startWorker(index));
    slot.held.push(request.id);
    slot.worker.postMessage(request);
    this.armTimer(index, slot);
  }

  private armTimer(index: number, slot: Slot): void {
    clearTimeout(slot.timer);
    slot.timer = undefined;
    if (slot.held.length > 0) slot.timer = setTimeout(() => void slot.worker.terminate(), DEADLINE_MS).unref();
    else if (slot.heapBytes > this.retirement.heapBytes)
      slot.timer = setTimeout(() => this.retire(index, slot), this.retirement.idleMs).unref();
  }

  private startWorker(index: number): Slot {
    const slot: Slot = { worker: startThread(this.heapMb), held: [], timer: undefined, heapBytes: 0 };
    slot.worker.unref();
    slot.worker.on('message', (answer: MapAnswer) => {
      slot.held = slot.held.filter((id) => id !== answer.id);
      slot.heapBytes = answer.heapBytes;
      this.armTimer(index, slot);
      const pending = this.pending.get(answer.id);
      this.pending.delete(answer.id);
      if ('parts' in answer) {
        pending?.resolve({ parts: decodedInTurn(answer.parts), rejections: answer.rejections });
        return;
      }
      const { status, code, message, details, headers, stack } = answer.error;
      if (stack) this.log.error({ stack }, 'otlp: a decoder worker failed on an export');
      pending?.reject(new AppError(status, code, message, details, headers));
    });
    // A message that cannot be read leaves its request unanswered: the worker is ended, which settles what it held.
    slot.worker.on('messageerror', () => void slot.worker.terminate());
    // ERR_WORKER_OUT_OF_MEMORY when an export needed more than its heap: the export gets 503, the worker is replaced.
    slot.worker.on('error', (error) => this.log.error({ err: error }, 'otlp: a decoder worker failed'));
    slot.worker.on('exit', () => this.workerGone(index, slot));
    return slot;
  }

  /** Ends an idle worker; its slot is empty from now on, so the next export starts a new one. */
  private retire(index: number, slot: Slot): void {
    this.slots[index] = undefined;
    void slot.worker.terminate();
  }

  /**
   * A worker ended (it failed, was stuck, or the pool is closing). The export it was working on fails, retryable;
   * the others it held go to its replacement.
   */
  private workerGone(index: number, slot: Slot): void {
    clearTimeout(slot.timer);
    if (this.slots[index] === slot) this.slots[index] = undefined;
    const [current, ...queued] = slot.held;
    if (current !== undefined) {
      this.pending.get(current)?.reject(unavailable('the OTLP decoder failed on this export; retry'));
      this.pending.delete(current);
    }
    for (const id of queued) {
      const pending = this.pending.get(id);
      if (!pending) continue;
      if (this.closed) {
        pending.reject(unavailable('the service is stopping'));
        this.pending.delete(id);
      } else this.send(pending.request);
    }
  }

  /** Stops the workers; exports still held get 503. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.slots.map((slot) => slot?.worker.terminate()));
  }
}
