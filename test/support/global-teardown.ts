// Runs once after the last test: the run's embedded stores go with it, so repeated runs do not fill the disk.
import fs from 'node:fs';

export default function tearDown(): void {
  const directory = process.env.RUNWATCH_TEST_DIR;
  if (directory) fs.rmSync(directory, { recursive: true, force: true });
}
