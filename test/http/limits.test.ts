// Overload limits through the real server (issue 22, docs/limits.md): reads and ingest in lanes of their own, each
// bounded, refusing with 503 + Retry-After at once past its queue; a budget of request-body bytes in flight; and
// connections bounded in time (headers, a body stalled mid-way, idle keep-alive) and in number (in all, per address),
// probed with raw sockets.
import { once } from 'node:events';
import type { Server } from 'node:http';
import net, { type AddressInfo } from 'node:net';
import type { Config } from '../../src/config';
import { anotherService, startTestApp, type TestApp } from '../support/app';
import { setUpProject } from '../support/fixtures';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.close());

/** The service with some limits changed, listening on a port of its own (its bounded server, as main.ts runs it). */
async function serve(
  limits: Partial<Config>,
  use: (port: number, service: ReturnType<typeof anotherService>) => Promise<void>,
) {
  const service = anotherService(app, limits);
  const server: Server = service.app.listen(0, '127.0.0.1');
  await once(server, 'listening');
  try {
    await use((server.address() as AddressInfo).port, service);
  } finally {
    server.closeAllConnections();
    server.close();
    await service.otlpDecoders.close();
    await service.ingest.drain();
  }
}

const connections = (changes: Partial<Config['connections']>): Config['connections'] => ({
  ...app.config.connections,
  ...changes,
});

/** A raw connection; resolves with what the server sent until it closed, and how long that took. */
async function rawExchange(port: number, send: (socket: net.Socket) => void, maxMs = 10_000) {
  const socket = net.connect(port, '127.0.0.1');
  await once(socket, 'connect');
  const startedAt = Date.now();
  let received = '';
  socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
  socket.on('error', () => undefined);
  send(socket);
  const timer = setTimeout(() => socket.destroy(), maxMs);
  await once(socket, 'close');
  clearTimeout(timer);
  return { received, ms: Date.now() - startedAt };
}

describe('lanes', () => {
  it('answers reads past their lane 503 with Retry-After at once, while ingest beside them is served', async () => {
    const lanes = { read: { concurrency: 1, queue: 0, queueTimeoutMs: 1000 }, ingest: app.config.lanes.ingest };
    await serve({ lanes }, async (port) => {
      const { project, key } = await setUpProject(app);
      const base = `http://127.0.0.1:${port}`;
      const auth = { Authorization: `Bearer ${key}` };
      const reads = Array.from({ length: 12 }, () =>
        fetch(`${base}/projects/${project.id}/agent/summary`, { headers: auth }),
      );
      const starts = Array.from({ length: 12 }, (_, i) =>
        fetch(`${base}/ingest/agent/runs`, {
          method: 'POST',
          headers: { ...auth, 'Content-Type': 'application/json' },
          body: JSON.stringify({ agent_name: `lane-${i}` }),
        }),
      );
      const [readAnswers, startAnswers] = await Promise.all([Promise.all(reads), Promise.all(starts)]);
      const readStatuses = readAnswers.map((res) => res.status);
      expect(readStatuses).toContain(200);
      expect(readStatuses).toContain(503);
      expect(readStatuses.every((status) => status === 200 || status === 503)).toBe(true);
      for (const res of readAnswers.filter((answer) => answer.status === 503)) {
        expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
        expect(((await res.json()) as { error: { code: string } }).error.code).toBe('unavailable');
      }
      expect(startAnswers.map((res) => res.status)).toEqual(starts.map(() => 201));
    });
  });

  it('lets a read wait in the queue for its turn, up to the queue timeout', async () => {
    const lanes = { read: { concurrency: 1, queue: 20, queueTimeoutMs: 30_000 }, ingest: app.config.lanes.ingest };
    await serve({ lanes }, async (port) => {
      const { project, key } = await setUpProject(app);
      const answers = await Promise.all(
        Array.from({ length: 6 }, () =>
          fetch(`http://127.0.0.1:${port}/projects/${project.id}/agent/runs`, {
            headers: { Authorization: `Bearer ${key}` },
          }),
        ),
      );
      expect(answers.map((res) => res.status)).toEqual(answers.map(() => 200));
    });
  });
});

describe('reads and the flush', () => {
  it('answers a read 503 + Retry-After when the flush it waits for takes longer than READ_FLUSH_WAIT_MS', async () => {
    await serve({ readFlushWaitMs: 1, ingestFlushIntervalMs: 60_000 }, async (port, service) => {
      const { project, key } = await setUpProject(app);
      const base = `http://127.0.0.1:${port}`;
      const auth = { Authorization: `Bearer ${key}` };
      const started = await fetch(`${base}/ingest/agent/runs`, {
        method: 'POST',
        headers: { ...auth, 'Content-Type': 'application/json' },
        body: JSON.stringify({ agent_name: 'flush-wait' }),
      });
      expect(started.status).toBe(201);
      // The run is in the ingest log, not yet in ClickHouse: no flush takes a millisecond.
      const waiting = await fetch(`${base}/projects/${project.id}/agent/runs`, { headers: auth });
      expect(waiting.status).toBe(503);
      expect(waiting.headers.get('retry-after')).toMatch(/^\d+$/);
      // Load refused past a limit (OverloadError: logged as a refusal), not a store that failed.
      expect(((await waiting.json()) as { error: unknown }).error).toMatchObject({
        code: 'unavailable',
        message: 'recent writes are still being flushed; retry',
      });
      await service.writer.flushedAll();
      const flushed = await fetch(`${base}/projects/${project.id}/agent/runs`, { headers: auth });
      expect(flushed.status).toBe(200);
    });
  });
});

describe('reads in their time', () => {
  // The embedded engine runs a statement a connection, on a few connections (src/db/chdb-pool.ts); a server runs them
  // side by side without a bound.
  const longStatement = (rows: number) =>
    app.stores.ch.query({
      name: 'long',
      sql: 'SELECT sum(cityHash64(toString(number))) AS total FROM numbers({rows:UInt64}) SETTINGS max_threads = 1',
      params: { rows },
    });
  const summaryAt = (port: number, projectId: string, key: string) =>
    fetch(`http://127.0.0.1:${port}/projects/${projectId}/agent/summary`, {
      headers: { Authorization: `Bearer ${key}` },
    });

  it('answers a read while a long statement runs', async () => {
    await serve({ read: { timeoutMs: 60_000, threadNice: 0 } }, async (port) => {
      const { project, key } = await setUpProject(app);
      const startedAt = Date.now();
      let longMs = 0;
      const long = longStatement(600_000_000).then(() => (longMs = Date.now() - startedAt));
      const res = await summaryAt(port, project.id, key);
      const answeredMs = Date.now() - startedAt;
      await long;
      expect(res.status).toBe(200);
      // Before, the read's statements waited for the long one (chdb ran statements with parameters one at a time).
      expect(answeredMs).toBeLessThan(longMs);
    });
  });

  (process.env.CLICKHOUSE_URL ? it.skip : it)(
    'answers a read 503 + Retry-After within READ_TIMEOUT_MS when its statements cannot start in time',
    async () => {
      await serve({ read: { timeoutMs: 500, threadNice: 0 } }, async (port) => {
        const { project, key } = await setUpProject(app);
        // Every connection of the embedded engine busy for seconds.
        const startedAt = Date.now();
        const long = Promise.all(Array.from({ length: 4 }, () => longStatement(300_000_000)));
        const res = await summaryAt(port, project.id, key);
        const answeredMs = Date.now() - startedAt;
        await long;
        const longMs = Date.now() - startedAt;
        expect(res.status).toBe(503);
        expect(res.headers.get('retry-after')).toBe('1');
        expect(answeredMs).toBeLessThan(1500);
        // Without the read's time, it would have been answered after the long statements.
        expect(longMs).toBeGreaterThan(2500);
      });
    },
  );
});

describe('request bytes in flight', () => {
  it('refuses a body past the budget with 503 + Retry-After while another is held, and takes it after', async () => {
    await serve({ requestBytesInFlight: 64 * 1024 }, async (port) => {
      const { key } = await setUpProject(app);
      const body = JSON.stringify({ agent_name: 'budget', input: 'x'.repeat(40_000) });
      const head = (length: number) =>
        `POST /ingest/agent/runs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`;
      // The first body is held: its headers and half of it sent, the rest not yet.
      const held = net.connect(port, '127.0.0.1');
      await once(held, 'connect');
      held.write(head(body.length) + body.slice(0, 20_000));
      await new Promise((resolve) => setTimeout(resolve, 300));
      const refused = await fetch(`http://127.0.0.1:${port}/ingest/agent/runs`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
        body,
      });
      expect(refused.status).toBe(503);
      expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
      // Once the held body is whole and answered, its bytes are free again.
      let answer = '';
      held.on('data', (chunk: Buffer) => (answer += chunk.toString()));
      held.write(body.slice(20_000));
      while (!answer.includes('\r\n\r\n')) await new Promise((resolve) => setTimeout(resolve, 20));
      expect(answer).toMatch(/^HTTP\/1\.1 201/);
      held.destroy();
      const taken = await fetch(`http://127.0.0.1:${port}/ingest/agent/runs`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
        body,
      });
      expect(taken.status).toBe(201);
    });
  });
});

describe('connections', () => {
  const limits = () => connections({ headersTimeoutMs: 500, requestTimeoutMs: 1000, keepAliveTimeoutMs: 300 });

  it('closes a connection whose headers do not come in time, with 408', async () => {
    await serve({ connections: limits() }, async (port) => {
      const { received, ms } = await rawExchange(port, (socket) =>
        socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n'),
      );
      expect(received).toMatch(/^HTTP\/1\.1 408/);
      expect(ms).toBeLessThan(3000);
    });
  });

  it('closes a connection that never sends a byte', async () => {
    await serve({ connections: limits() }, async (port) => {
      const { ms } = await rawExchange(port, () => undefined);
      expect(ms).toBeLessThan(3000);
    });
  });

  it('closes a connection whose body stalls mid-way, with 408', async () => {
    await serve({ connections: limits() }, async (port) => {
      const { key } = await setUpProject(app);
      const { received, ms } = await rawExchange(port, (socket) =>
        socket.write(
          `POST /ingest/agent/runs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n` +
            'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"agent_name":',
        ),
      );
      expect(received).toMatch(/^HTTP\/1\.1 408/);
      expect(ms).toBeLessThan(4000);
    });
  });

  it('closes an idle keep-alive connection after its timeout', async () => {
    await serve({ connections: limits() }, async (port) => {
      const { received, ms } = await rawExchange(port, (socket) =>
        socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'),
      );
      expect(received).toMatch(/^HTTP\/1\.1 200/);
      expect(ms).toBeLessThan(2500);
    });
  });

  it('caps the connections of one address, and in all', async () => {
    const open = async (port: number, count: number) => {
      const sockets = Array.from({ length: count }, () => net.connect(port, '127.0.0.1').on('error', () => undefined));
      await Promise.all(sockets.map((socket) => once(socket, 'connect')));
      return sockets;
    };
    const closedAtOnce = (socket: net.Socket) =>
      Promise.race([
        once(socket, 'close').then(() => true),
        new Promise((resolve) => setTimeout(() => resolve(false), 1000)),
      ]);
    for (const limit of [connections({ perAddress: 3 }), connections({ max: 3, perAddress: 0 })]) {
      await serve({ connections: limit }, async (port) => {
        const idle = await open(port, 3);
        const [fourth] = await open(port, 1);
        expect(await closedAtOnce(fourth)).toBe(true);
        expect(await closedAtOnce(idle[0])).toBe(false);
        // Once one closes, a new connection is served.
        idle[0].destroy();
        await new Promise((resolve) => setTimeout(resolve, 100));
        expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
        for (const socket of idle) socket.destroy();
      });
    }
  });
});
