// Refuses notification URLs that point into private networks (WEBHOOK_DENY_PRIVATE): at rule creation and at delivery.
import { lookup } from 'node:dns/promises';
import net from 'node:net';
import { AppError } from '../errors';

/** A URL that is not http(s), or whose host is (or resolves to) a private, loopback or otherwise internal address. */
export class UnsafeUrlError extends AppError {
  constructor(message: string) {
    super(400, 'validation_failed', message, [{ path: 'url', message }]);
  }
}

// Everything that is not the public internet: RFC 1918, loopback, link-local (cloud metadata), CGNAT, benchmarking,
// documentation, multicast and reserved ranges, and their IPv6 counterparts.
const internal = new net.BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  internal.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
  ['2001:db8::', 32],
  ['100::', 64],
] as const) {
  internal.addSubnet(network, prefix, 'ipv6');
}

/** The IPv4 address inside an IPv4-mapped (::ffff:a.b.c.d), IPv4-compatible or NAT64 (64:ff9b::/96) IPv6 address. */
function embeddedIpv4(address: string): string | undefined {
  const lower = address.toLowerCase();
  const dotted = /^(?:::ffff:|::|64:ff9b::)(\d+\.\d+\.\d+\.\d+)$/.exec(lower);
  if (dotted) return dotted[1];
  const hex = /^(?:::ffff:|64:ff9b::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(lower);
  if (!hex) return undefined;
  const high = parseInt(hex[1], 16);
  const low = parseInt(hex[2], 16);
  return [high >> 8, high & 255, low >> 8, low & 255].join('.');
}

/** Whether an IP address (v4 or v6) is outside the public internet. */
export function isInternalAddress(address: string): boolean {
  const family = net.isIP(address);
  if (family === 4) return internal.check(address, 'ipv4');
  if (family === 6) {
    const v4 = embeddedIpv4(address);
    return v4 !== undefined ? internal.check(v4, 'ipv4') : internal.check(address, 'ipv6');
  }
  return true;
}

/**
 * Resolves the URL's host and throws UnsafeUrlError unless it is http(s) and every address it resolves to is public.
 * Callers at delivery time should post to the address checked here, or re-check right before connecting (DNS
 * rebinding).
 */
export async function assertPublicUrl(url: string): Promise<void> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UnsafeUrlError('must be a valid URL');
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new UnsafeUrlError('must be an http(s) URL');
  const host = parsed.hostname.replace(/^\[(.*)\]$/, '$1');
  let addresses: string[];
  if (net.isIP(host)) {
    addresses = [host];
  } else {
    try {
      addresses = (await lookup(host, { all: true, verbatim: true })).map((entry) => entry.address);
    } catch {
      throw new UnsafeUrlError(`host ${host} could not be resolved`);
    }
  }
  if (addresses.length === 0) throw new UnsafeUrlError(`host ${host} could not be resolved`);
  const blocked = addresses.find(isInternalAddress);
  if (blocked !== undefined)
    throw new UnsafeUrlError(
      `host ${host} is a private or loopback address (${blocked}); this deployment refuses those`,
    );
}
