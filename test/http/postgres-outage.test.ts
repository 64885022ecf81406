// A Postgres server that goes away (contract §1): 503 with Retry-After, never a 500 or a hang; back when it is.
// The service reaches the real server through a TCP relay that the test cuts and restores.
import net from 'node:net';
import { startTestApp, type TestApp } from '../support/app';
import { expectError } from '../support/assertions';
import { bearer, setUpProject } from '../support/fixtures';

const serverUrl = process.env.DATABASE_URL ? new URL(process.env.DATABASE_URL) : undefined;

/** Relays 127.0.0.1:port to the Postgres server; `cut` drops every connection and refuses new ones. */
function startRelay(target: URL) {
  const sockets = new Set<net.Socket>();
  let server: net.Server | undefined;
  const listen = (port: number) =>
    new Promise<number>((resolve) => {
      server = net.createServer((client) => {
        const upstream = net.connect(Number(target.port || 5432), target.hostname);
        for (const socket of [client, upstream]) {
          sockets.add(socket);
          socket.on('close', () => sockets.delete(socket));
          socket.on('error', () => socket.destroy());
        }
        client.pipe(upstream).pipe(client);
      });
      server.listen(port, '127.0.0.1', () => resolve((server!.address() as net.AddressInfo).port));
    });
  return {
    listen,
    cut: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server!.close(() => resolve());
      }),
  };
}

(serverUrl ? describe : describe.skip)('Postgres server outage (DATABASE_URL)', () => {
  let app: TestApp;
  let relay: ReturnType<typeof startRelay>;
  let port: number;

  beforeAll(async () => {
    relay = startRelay(serverUrl!);
    port = await relay.listen(0);
    const relayed = new URL(serverUrl!.href);
    relayed.hostname = '127.0.0.1';
    relayed.port = String(port);
    app = await startTestApp({ DATABASE_URL: relayed.href });
  });
  afterAll(async () => {
    await relay.cut().catch(() => undefined);
    await app.close();
  });

  it('answers 503 unavailable with Retry-After while the server is gone, and works again once it is back', async () => {
    const { admin, org } = await setUpProject(app);
    await app.http.get('/auth/me').set(bearer(admin.token)).expect(200);

    await relay.cut();
    const calls = [
      app.http.get('/auth/me').set(bearer(admin.token)),
      app.http.get(`/admin/orgs/${org.id}/projects`).set(bearer(admin.token)),
      app.http.post('/auth/login').send({ email: admin.user.email, password: admin.password }),
      app.http.get('/readyz'),
    ];
    for (const res of await Promise.all(calls)) {
      expectError(res, 503, 'unavailable');
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
      expect(res.body.error.message).not.toMatch(/ECONN|SELECT|INSERT/);
    }

    await relay.listen(port);
    await app.http.get('/readyz').expect(200);
    await app.http.get('/auth/me').set(bearer(admin.token)).expect(200);
  });
});
