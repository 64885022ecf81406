// Runs once before the workers start: one scratch directory for this test run's embedded stores.
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export default function setUp(): void {
  // Workers are started after this, so they inherit the variable.
  process.env.RUNWATCH_TEST_DIR = fs.mkdtempSync(path.join(os.tmpdir(), `runwatch-test-${randomUUID().slice(0, 8)}-`));
}
