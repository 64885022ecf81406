// Requests node's HTTP parser refuses before any route sees them get the contract's error body too (contract §1):
// a request line and headers over node's limit (a 64 KB query string) 431, a request that is not HTTP 400.
import { once } from 'node:events';
import type { Server } from 'node:http';
import net, { type AddressInfo } from 'node:net';
import type { Response } from 'supertest';
import { startTestApp, type TestApp } from '../support/app';
import { expectError } from '../support/assertions';

let app: TestApp;
let server: Server;
let port: number;

beforeAll(async () => {
  app = await startTestApp();
  // Through the service's own server: supertest's would not have its clientError listener.
  server = app.app.listen(0, '127.0.0.1');
  await once(server, 'listening');
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  await app.close();
});

/** Sends raw bytes, reads the answer until the server closes the connection: its status, headers and JSON body. */
async function exchangeRaw(request: string) {
  const socket = net.connect(port, '127.0.0.1', () => socket.write(request));
  let raw = '';
  socket.on('data', (chunk) => (raw += chunk.toString('utf8')));
  await once(socket, 'close');
  const [head, body] = raw.split('\r\n\r\n');
  const [statusLine, ...headerLines] = head.split('\r\n');
  const headers = Object.fromEntries(
    headerLines.map((line) => line.split(': ')).map(([name, value]) => [name.toLowerCase(), value]),
  );
  return { status: Number(statusLine.split(' ')[1]), headers, body: JSON.parse(body) } as unknown as Response;
}

it('a 64 KB query string: 431 request_header_too_large in the error body, and the connection closes', async () => {
  const res = await fetch(`http://127.0.0.1:${port}/healthz?q=${'a'.repeat(65_536)}`);
  const answer = {
    status: res.status,
    headers: Object.fromEntries(res.headers),
    body: await res.json(),
  } as unknown as Response;
  const error = expectError(answer, 431, 'request_header_too_large');
  expect(error.details).toEqual([]);
  expect(answer.headers.connection).toBe('close');
});

it('a request that is not HTTP: 400 malformed_request in the error body', async () => {
  const answer = await exchangeRaw('NOT HTTP AT ALL\r\n\r\n');
  expectError(answer, 400, 'malformed_request');
  expect(answer.headers.connection).toBe('close');
});

it('the same server goes on answering well-formed requests', async () => {
  expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
});
