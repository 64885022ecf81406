// The rig's check (docs/scale-out.md#the-rig): with deploy/cluster/docker-compose.yml up, sends runs across the
// three instances (start, steps and finish each on an instance at random), stops a ClickHouse replica and kills an
// instance mid-load, brings the instance back (its ingest log is replayed), and checks that every instance and the
// load balancer show every acknowledged write. Prints PASS or FAIL per check; exits 1 on any FAIL.
//   docker compose -f deploy/cluster/docker-compose.yml up -d --build --wait
//   npx tsx deploy/cluster/check.ts
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { convergence, setUpTenant, traffic } from '../../test/support/traffic';

const COMPOSE = ['compose', '-f', path.join(__dirname, 'docker-compose.yml')];
const BALANCER = 'http://127.0.0.1:8080';
const INSTANCES = {
  'runwatch-1': 'http://127.0.0.1:8081',
  'runwatch-2': 'http://127.0.0.1:8082',
  'runwatch-3': 'http://127.0.0.1:8083',
};
const RUNS = Number(process.env.RUNS ?? 2000);
// Reads on any instance see an acknowledged write once its instance flushed it: INGEST_FLUSH_INTERVAL_MS (1 s) and
// the insert; a restarted instance replays its log first.
const BOUND_MS = 30_000;

const docker = (...args: string[]) => execFileSync('docker', [...COMPOSE, ...args], { stdio: 'inherit' });
let failed = false;
const report = (check: string, ok: boolean, detail = '') => {
  failed ||= !ok;
  console.log(`${ok ? 'PASS' : 'FAIL'} ${check}${detail ? `: ${detail}` : ''}`);
};

async function ready(url: string, ms = 120_000): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (
      await fetch(`${url}/readyz`).then(
        (res) => res.ok,
        () => false,
      )
    )
      return true;
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
  return false;
}

async function main() {
  for (const [name, url] of Object.entries(INSTANCES)) report(`${name} ready`, await ready(url));
  const tenant = await setUpTenant(BALANCER);
  let up = Object.values(INSTANCES);
  const load = traffic(tenant, () => up);
  const sending = load.send(RUNS, 16);
  // A third of the way in: a replica of shard 2 stops (no instance reaches the cluster through it), and an instance
  // is killed (SIGKILL: no graceful stop); it comes back a little later, replaying its ingest log.
  await load.acknowledgedAtLeast(RUNS / 3, sending);
  docker('stop', 'ch-s2-r2');
  up = up.filter((url) => url !== INSTANCES['runwatch-2']);
  docker('kill', '-s', 'SIGKILL', 'runwatch-2');
  await new Promise((resolve) => setTimeout(resolve, 5000));
  docker('start', 'runwatch-2');
  report('runwatch-2 back after kill -9', await ready(INSTANCES['runwatch-2']));
  up = Object.values(INSTANCES);
  await sending;
  const runs = [...load.acknowledged.values()];
  const finished = runs.filter((run) => run.finished).length;
  console.log(`${runs.length} runs acknowledged (${finished} finished), ${load.failures} calls failed`);
  for (const [name, url] of [...Object.entries(INSTANCES), ['nginx', BALANCER]]) {
    const { ms, missing } = await convergence(url, tenant, runs, BOUND_MS);
    report(
      `${name} shows every acknowledged write`,
      missing.length === 0,
      missing.length ? missing.slice(0, 5).join('; ') : `${ms} ms`,
    );
  }
  docker('start', 'ch-s2-r2');
  process.exit(failed ? 1 : 0);
}

main().catch((error) => {
  console.log(`FAIL ${(error as Error).message}`);
  process.exit(1);
});
