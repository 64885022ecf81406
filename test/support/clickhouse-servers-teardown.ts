// Server mode's global teardown: the test ClickHouse servers stop, and their data goes with them.
import fs from 'node:fs';

export default async function tearDown(): Promise<void> {
  const started = globalThis.runwatchClickHouseServers;
  if (!started) return;
  await Promise.all(started.servers.map((server) => server.stop()));
  fs.rmSync(started.dataDir, { recursive: true, force: true });
}
