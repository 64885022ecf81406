// Group commit for any store call: concurrent callers share one call, and each gets its own part of the answer.
interface PendingCall<Item, Result> {
  items: readonly Item[];
  resolve: (results: Result[]) => void;
  reject: (error: unknown) => void;
}

export class Batcher<Item, Result> {
  private pending: PendingCall<Item, Result>[] = [];
  private running: Promise<void> | undefined;

  /** `call` answers one result per item, in order; at most `maxItems` go into one call (one caller's never split). */
  constructor(
    private readonly call: (items: Item[]) => Promise<Result[]>,
    private readonly maxItems: number,
  ) {}

  /**
   * Resolves once the call holding these items has succeeded; rejects, as every caller of that call does, if it fails.
   */
  submit(items: readonly Item[]): Promise<Result[]> {
    if (items.length === 0) return Promise.resolve([]);
    return new Promise((resolve, reject) => {
      this.pending.push({ items, resolve, reject });
      // The first caller of a quiet period starts a call on the next turn of the event loop; callers that
      // arrive while a call is under way wait for it and go together in the next one.
      this.running ??= new Promise<void>((done) => setImmediate(done)).then(() => this.callAll());
    });
  }

  /** Waits until every call submitted so far has finished; used at shutdown. */
  async drain(): Promise<void> {
    while (this.running) await this.running;
  }

  private async callAll(): Promise<void> {
    while (this.pending.length > 0) await this.callOnce(this.takeBatch());
    this.running = undefined;
  }

  private takeBatch(): PendingCall<Item, Result>[] {
    let itemCount = 0;
    let taken = 0;
    while (
      taken < this.pending.length &&
      (taken === 0 || itemCount + this.pending[taken].items.length <= this.maxItems)
    ) {
      itemCount += this.pending[taken].items.length;
      taken += 1;
    }
    return this.pending.splice(0, taken);
  }

  private async callOnce(batch: PendingCall<Item, Result>[]): Promise<void> {
    try {
      const results = await this.call(batch.flatMap((caller) => caller.items));
      let offset = 0;
      for (const caller of batch) {
        caller.resolve(results.slice(offset, offset + caller.items.length));
        offset += caller.items.length;
      }
    } catch (error) {
      for (const caller of batch) caller.reject(error);
    }
  }
}
