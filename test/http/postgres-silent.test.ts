// A Postgres server that keeps its connections and accepts new ones but never answers (contract §1): calls get 503
// with Retry-After within the configured timeouts, never a hang, and /readyz says not ready; back once it answers.
// The service reaches the real server through a TCP relay that the test silences and restores.
import net from 'node:net';
import { startTestApp, type TestApp } from '../support/app';
import { expectError } from '../support/assertions';
import { bearer, setUpProject } from '../support/fixtures';

const serverUrl = process.env.DATABASE_URL ? new URL(process.env.DATABASE_URL) : undefined;
const TIMEOUT_MS = 1000;
// The connect timeout, or the query timeout and the client's second of margin (postgres.ts), and some slack.
const ANSWERED_WITHIN_MS = TIMEOUT_MS + 1000 + 1500;

/** Relays 127.0.0.1:port to the Postgres server; `silence` stops every byte both ways, new connections included. */
function startRelay(target: URL) {
  const relayed = new Set<{ client: net.Socket; upstream: net.Socket }>();
  const held = new Set<net.Socket>();
  let silent = false;
  const server = net.createServer((client) => {
    client.on('error', () => client.destroy());
    if (silent) {
      held.add(client);
      return;
    }
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    upstream.on('error', () => upstream.destroy());
    const pair = { client, upstream };
    relayed.add(pair);
    client.on('close', () => relayed.delete(pair));
    client.pipe(upstream).pipe(client);
  });
  return {
    listen: () =>
      new Promise<number>((resolve) =>
        server.listen(0, '127.0.0.1', () => resolve((server.address() as net.AddressInfo).port)),
      ),
    silence() {
      silent = true;
      for (const { client, upstream } of relayed) {
        client.unpipe(upstream);
        upstream.unpipe(client);
      }
    },
    /** Answers again: the silenced connections are dropped (the pool opens new ones), new ones are relayed. */
    restore() {
      silent = false;
      for (const socket of [...held, ...[...relayed].flatMap(({ client, upstream }) => [client, upstream])])
        socket.destroy();
      held.clear();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of [...held, ...[...relayed].flatMap(({ client, upstream }) => [client, upstream])])
          socket.destroy();
        server.close(() => resolve());
      }),
  };
}

(serverUrl ? describe : describe.skip)('a Postgres server that does not answer (DATABASE_URL)', () => {
  let app: TestApp;
  let relay: ReturnType<typeof startRelay>;

  beforeAll(async () => {
    relay = startRelay(serverUrl!);
    const relayed = new URL(serverUrl!.href);
    relayed.hostname = '127.0.0.1';
    relayed.port = String(await relay.listen());
    app = await startTestApp({
      DATABASE_URL: relayed.href,
      DATABASE_CONNECT_TIMEOUT_MS: String(TIMEOUT_MS),
      DATABASE_QUERY_TIMEOUT_MS: String(TIMEOUT_MS),
    });
  });
  afterAll(async () => {
    relay.restore();
    await app.close();
    await relay.close();
  });

  it('is 503 unavailable with Retry-After within the timeouts, /readyz too; recovers once it answers', async () => {
    const { admin, org } = await setUpProject(app);
    await app.http.get('/auth/me').set(bearer(admin.token)).expect(200);

    relay.silence();
    const startedAt = Date.now();
    const calls = [
      app.http.get('/auth/me').set(bearer(admin.token)),
      app.http.get(`/admin/orgs/${org.id}/projects`).set(bearer(admin.token)),
      app.http.post(`/admin/orgs/${org.id}/projects`).set(bearer(admin.token)).send({ name: 'while silent' }),
      app.http.post('/auth/login').send({ email: admin.user.email, password: admin.password }),
      app.http.get('/readyz'),
    ];
    for (const res of await Promise.all(calls)) {
      expectError(res, 503, 'unavailable');
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
      expect(res.body.error.message).not.toMatch(/timeout|SELECT|INSERT/i);
    }
    expect(Date.now() - startedAt).toBeLessThan(ANSWERED_WITHIN_MS);

    relay.restore();
    await app.http.get('/readyz').expect(200);
    await app.http.get('/auth/me').set(bearer(admin.token)).expect(200);
    const projects = await app.http.get(`/admin/orgs/${org.id}/projects`).set(bearer(admin.token)).expect(200);
    expect(projects.body.map((project: { name: string }) => project.name)).not.toContain('while silent');
  });
});
