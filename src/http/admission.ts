// What the server admits at once, so that overload is answered (503 with Retry-After, which clients and OTLP
// exporters retry) instead of queued without bound: lanes of requests by kind (reads, ingest), each with a bounded
// concurrency and a bounded queue, and a budget of request-body bytes held in memory across requests
// (docs/limits.md).
import { OverloadError } from '../errors';

export interface LaneLimits {
  /** Requests served at once. */
  concurrency: number;
  /** Requests waiting for a turn; past it a request is refused at once. */
  queue: number;
  /** How long a request waits in the queue before it is refused. */
  queueTimeoutMs: number;
}

/** How a lane's requests are run once admitted, given when each arrived: for reads, in a read's scope. */
export type LaneScope = <T>(arrivedAt: number, work: () => Promise<T>) => Promise<T>;

interface Waiter {
  admit(): void;
  timer: NodeJS.Timeout;
}

/**
 * A lane: at most `concurrency` requests in it at once, then up to `queue` waiting (first come, first served) for at
 * most `queueTimeoutMs`, then a 503. A lane's requests never wait for another lane's, so reads cannot starve ingest.
 */
export class Lane {
  private running = 0;
  private readonly waiting: Waiter[] = [];

  constructor(
    readonly name: string,
    private readonly limits: LaneLimits,
    /** Runs each admitted request (by default, as it is). */
    readonly scope: LaneScope = (_arrivedAt, work) => work(),
  ) {}

  /** Resolves with the function that ends the turn (call it once) when the request may run; rejects with a 503. */
  enter(): Promise<() => void> {
    if (this.running < this.limits.concurrency) return Promise.resolve(this.turn());
    if (this.waiting.length >= this.limits.queue) return Promise.reject(this.full());
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        admit: () => resolve(this.turn()),
        timer: setTimeout(() => {
          this.waiting.splice(this.waiting.indexOf(waiter), 1);
          reject(this.full());
        }, this.limits.queueTimeoutMs),
      };
      this.waiting.push(waiter);
    });
  }

  /** Requests running and waiting, for the logs and tests. */
  load(): { running: number; waiting: number } {
    return { running: this.running, waiting: this.waiting.length };
  }

  private turn(): () => void {
    this.running += 1;
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      this.running -= 1;
      const next = this.waiting.shift();
      if (next) {
        clearTimeout(next.timer);
        next.admit();
      }
    };
  }

  private full(): OverloadError {
    return new OverloadError(`too many ${this.name} requests at once; retry`);
  }
}

/**
 * Bytes of request bodies held at once, across requests: a body is charged as it is read (decompressed) and until its
 * answer is sent, since decoding it holds its bytes and what they decode to. A request whose Content-Length does not
 * fit is refused before its body is read; one that grows past the budget as it is read, once it has been read off.
 */
export class ByteBudget {
  private held = 0;

  constructor(readonly limit: number) {}

  /** A charge for one request, starting at `declared` bytes; undefined (refuse it) when they do not fit. */
  open(declared: number): BodyCharge | undefined {
    if (!this.fits(declared, 0)) return undefined;
    this.held += declared;
    let charged = declared;
    let released = false;
    return {
      grow: (total) => {
        if (released || total <= charged) return true;
        if (!this.fits(total - charged, charged)) return false;
        this.held += total - charged;
        charged = total;
        return true;
      },
      release: () => {
        if (released) return;
        released = true;
        this.held -= charged;
      },
    };
  }

  /** Bytes held now. */
  get inFlight(): number {
    return this.held;
  }

  // A request alone is always let in (its route's body limit bounds it), so that a body near that limit is never
  // refused forever: `own` is what the request holds already.
  private fits(bytes: number, own: number): boolean {
    return this.held === own || this.held + bytes <= this.limit;
  }
}

export interface BodyCharge {
  /** Charges the body read so far (`total` bytes); false when that does not fit. */
  grow(total: number): boolean;
  release(): void;
}

/** The 503 of a body past the budget. */
export const overBudget = () => new OverloadError('too many request bytes are being processed at once; retry');
