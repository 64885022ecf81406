// Group commit: concurrent writers share one ClickHouse insert, and each is answered only once that insert succeeded.
interface PendingWrite<Row> {
  rows: readonly Row[];
  resolve: () => void;
  reject: (error: unknown) => void;
}

export class BatchWriter<Row> {
  private pending: PendingWrite<Row>[] = [];
  private flushing: Promise<void> | undefined;

  constructor(
    private readonly insert: (rows: Row[]) => Promise<void>,
    private readonly maxRows: number,
  ) {}

  /** Resolves once the rows are stored; rejects, like every write of the same insert, when it fails. */
  write(rows: readonly Row[]): Promise<void> {
    if (rows.length === 0) return Promise.resolve();
    return new Promise((resolve, reject) => {
      this.pending.push({ rows, resolve, reject });
      // The first write of a quiet period starts a flush on the next turn of the event loop; writes that
      // arrive while an insert is under way wait for it and go together in the next one.
      this.flushing ??= new Promise<void>((done) => setImmediate(done)).then(() => this.flushAll());
    });
  }

  /** Waits until everything written so far is stored (or has failed); used at shutdown. */
  async drain(): Promise<void> {
    while (this.flushing) await this.flushing;
  }

  private async flushAll(): Promise<void> {
    while (this.pending.length > 0) await this.flushOne(this.takeBatch());
    this.flushing = undefined;
  }

  private takeBatch(): PendingWrite<Row>[] {
    let rowCount = 0;
    let taken = 0;
    while (taken < this.pending.length && (taken === 0 || rowCount + this.pending[taken].rows.length <= this.maxRows)) {
      rowCount += this.pending[taken].rows.length;
      taken += 1;
    }
    return this.pending.splice(0, taken);
  }

  private async flushOne(batch: PendingWrite<Row>[]): Promise<void> {
    try {
      await this.insert(batch.flatMap((write) => write.rows));
      for (const write of batch) write.resolve();
    } catch (error) {
      for (const write of batch) write.reject(error);
    }
  }
}
