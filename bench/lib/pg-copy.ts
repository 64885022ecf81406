// COPY … FROM STDIN for node-postgres without an extra package: a Submittable that streams a file's bytes.
import fs from 'node:fs';
import type pg from 'pg';

interface CopyConnection {
  sendCopyFromChunk(chunk: Buffer): void;
  endCopyFrom(): void;
  sendCopyFail(message: string): void;
  query(text: string): void;
  stream: NodeJS.WritableStream & { writableNeedDrain?: boolean };
}

class CopyFromFile {
  private error: Error | undefined;
  rowCount = 0;

  constructor(
    readonly text: string,
    private readonly file: string,
    private readonly done: (error: Error | undefined, rows: number) => void,
  ) {}

  submit(connection: CopyConnection): void {
    connection.query(this.text);
  }

  async handleCopyInResponse(connection: CopyConnection): Promise<void> {
    try {
      for await (const chunk of fs.createReadStream(this.file, { highWaterMark: 1 << 20 })) {
        connection.sendCopyFromChunk(chunk as Buffer);
        if (connection.stream.writableNeedDrain)
          await new Promise((resolve) => connection.stream.once('drain', resolve));
      }
      connection.endCopyFrom();
    } catch (error) {
      connection.sendCopyFail(String((error as Error).message));
    }
  }

  handleCommandComplete(message: { text?: string }): void {
    this.rowCount = Number(/(\d+)$/.exec(message.text ?? '')?.[1] ?? 0);
  }

  handleError(error: Error): void {
    this.error = error;
  }

  handleReadyForQuery(): void {
    this.done(this.error, this.rowCount);
  }

  // COPY FROM sends none of these; they exist for the Submittable contract.
  handleRowDescription(): void {}
  handleDataRow(): void {}
  handleEmptyQuery(): void {}
  handlePortalSuspended(): void {}
  handleCopyData(): void {}
}

/** Streams a CSV file into `COPY <target> FROM STDIN (FORMAT csv)`; resolves with the rows copied. */
export function copyCsvFile(client: pg.Client, target: string, file: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const copy = new CopyFromFile(`COPY ${target} FROM STDIN (FORMAT csv)`, file, (error, rows) =>
      error ? reject(error) : resolve(rows),
    );
    client.query(copy as unknown as pg.Submittable);
  });
}
