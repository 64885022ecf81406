// Who sent a request, past the reverse proxies TRUST_PROXY trusts: read as express's `trust proxy` read it, with the
// library express used for it (proxy-addr).
import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import proxyAddr from 'proxy-addr';

export interface TrustedProxies {
  /** The client's address: the socket's peer, or when it is a trusted proxy, the address it forwarded. */
  clientAddress(req: IncomingMessage): string | undefined;
  /** Whether the client connected over HTTPS: TLS on the socket, or when it is a trusted proxy, X-Forwarded-Proto. */
  isHttps(req: IncomingMessage): boolean;
}

export function trustedProxies(trustProxy: boolean): TrustedProxies {
  const trust = () => trustProxy;
  return {
    clientAddress: (req) => proxyAddr(req, trust),
    isHttps(req) {
      const encrypted = (req.socket as TLSSocket).encrypted === true;
      const forwarded = req.headers['x-forwarded-proto'];
      if (!trustProxy || !forwarded) return encrypted;
      return String(forwarded).split(',')[0].trim() === 'https';
    },
  };
}
