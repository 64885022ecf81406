// /readyz says not ready while the local directories writes go to cannot be written, though both stores answer:
// every write would fail there (a full disk, a read-only mount). The fault here is a real OS error that holds for
// root too: the ingest log's directory replaced by a file (ENOTDIR). test/process/full-disk.test.ts fills a disk.
import fs from 'node:fs';
import { startTestApp, type TestApp } from '../support/app';
import { expectError } from '../support/assertions';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.close());

it('is 503 unavailable with Retry-After while the ingest log directory is unwritable, then ready again', async () => {
  await app.http.get('/readyz').expect(200);
  const directory = app.config.ingestLog!.directory;
  fs.rmSync(directory, { recursive: true });
  fs.writeFileSync(directory, 'not a directory');
  try {
    const res = await app.http.get('/readyz');
    expect(expectError(res, 503, 'unavailable').message).toBe('the data directory cannot be written');
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
  } finally {
    fs.rmSync(directory);
    fs.mkdirSync(directory);
  }
  await app.http.get('/readyz').expect(200);
  // The probe leaves nothing behind.
  expect(fs.readdirSync(directory)).toEqual([]);
});
