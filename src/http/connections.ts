// The HTTP server's connections, bounded (docs/limits.md): a request's headers and the whole request must arrive in
// time (a body stalled mid-way is answered 408 and closed), an idle keep-alive connection is closed, and connections
// are capped in all and per client address, so that idle or unfinished connections cannot use up the process's file
// descriptors.
import { createServer, type RequestListener, type Server } from 'node:http';
import type { Socket } from 'node:net';

export interface ConnectionLimits {
  /** Connections at once, in all: past it node closes new ones at once. */
  max: number;
  /** Connections at once from one address (the peer's, not X-Forwarded-For); 0 for no cap. */
  perAddress: number;
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  keepAliveTimeoutMs: number;
}

/** Node checks the header and request timeouts of its connections this often; they are kept to within it. */
const TIMEOUT_CHECK_MS = 1000;

/** Counts a socket against its address's cap; closes it at once when the address has its cap already. */
function capPerAddress(server: Server, cap: number): void {
  const open = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress ?? '';
    const count = (open.get(address) ?? 0) + 1;
    if (count > cap) {
      socket.destroy();
      return;
    }
    open.set(address, count);
    socket.once('close', () => {
      const left = open.get(address)! - 1;
      if (left === 0) open.delete(address);
      else open.set(address, left);
    });
  });
}

export function createBoundedServer(listener: RequestListener, limits: ConnectionLimits): Server {
  const server = createServer(
    {
      headersTimeout: limits.headersTimeoutMs,
      // Node wants the request timeout no shorter than the headers'.
      requestTimeout: Math.max(limits.requestTimeoutMs, limits.headersTimeoutMs),
      keepAliveTimeout: limits.keepAliveTimeoutMs,
      connectionsCheckingInterval: Math.min(TIMEOUT_CHECK_MS, limits.headersTimeoutMs),
    },
    listener,
  );
  server.maxConnections = limits.max;
  if (limits.perAddress > 0) capPerAddress(server, limits.perAddress);
  return server;
}
