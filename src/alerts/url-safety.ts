// Where notifications may be sent (docs/notifications.md#where-notifications-may-go): public addresses only, unless
// WEBHOOK_ALLOW_HOSTS lists the host or its network. Checked at rule creation and again at delivery, on the address
// the connection uses. Addresses are classified by ipaddr.js (its special-purpose ranges follow IANA's registries)
// rather than by our own parsing.
import { lookup as resolve } from 'node:dns/promises';
import dns from 'node:dns';
import net, { type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';
import { AppError } from '../errors';

/** A URL that is not http(s), or whose host is (or resolves to) an address the policy refuses. */
export class UnsafeUrlError extends AppError {
  constructor(message: string) {
    super(400, 'validation_failed', message, [{ path: 'url', message }]);
  }
}

/** What a deployment lets notifications reach. */
export interface UrlPolicy {
  /** False only with WEBHOOK_DENY_PRIVATE=false (the old opt-out, kept as it was): every address is allowed. */
  denyInternal: boolean;
  /** Host names (lower case; `*.example.com` for its subdomains) and networks WEBHOOK_ALLOW_HOSTS lets through. */
  allowedHosts: readonly string[];
  allowedNetworks: readonly [ipaddr.IPv4 | ipaddr.IPv6, number][];
}

/** The policy of WEBHOOK_DENY_PRIVATE and WEBHOOK_ALLOW_HOSTS (entries: host names, addresses or CIDR networks). */
export function urlPolicy(denyInternal: boolean, allowList: readonly string[]): UrlPolicy {
  const allowedHosts: string[] = [];
  const allowedNetworks: [ipaddr.IPv4 | ipaddr.IPv6, number][] = [];
  for (const entry of allowList) {
    if (ipaddr.isValidCIDR(entry)) allowedNetworks.push(ipaddr.parseCIDR(entry));
    else if (ipaddr.isValid(entry)) {
      const address = ipaddr.parse(entry);
      allowedNetworks.push([address, address.kind() === 'ipv4' ? 32 : 128]);
    } else allowedHosts.push(entry.toLowerCase().replace(/\.$/, ''));
  }
  return { denyInternal, allowedHosts, allowedNetworks };
}

/** The IPv4 addresses an IPv6 address carries: mapped, compatible, NAT64, 6to4 and Teredo (both ends) forms. */
function embeddedIpv4(address: ipaddr.IPv6): ipaddr.IPv4[] {
  const bytes = address.toByteArray();
  const v4 = (at: number, xor = 0) => new ipaddr.IPv4(bytes.slice(at, at + 4).map((byte) => byte ^ xor));
  switch (address.range()) {
    case 'ipv4Mapped':
    case 'rfc6145':
    case 'rfc6052':
      return [v4(12)];
    case '6to4':
      return [v4(2)];
    case 'teredo':
      return [v4(4), v4(12, 0xff)];
  }
  // IPv4-compatible (::a.b.c.d, deprecated), which ipaddr.js files under no range of its own.
  return bytes.slice(0, 12).every((byte) => byte === 0) ? [v4(12)] : [];
}

/**
 * Whether an address is outside the public internet: private, loopback, link-local (cloud metadata at
 * 169.254.169.254), CGNAT, unique-local, multicast, unspecified, reserved, documentation and benchmarking ranges, or
 * an IPv6 form that carries such an IPv4 address. Anything that does not parse is internal too.
 */
export function isInternalAddress(text: string): boolean {
  if (!ipaddr.isValid(text)) return true;
  const address = ipaddr.parse(text);
  if (address.kind() === 'ipv4') return address.range() !== 'unicast';
  const embedded = embeddedIpv4(address as ipaddr.IPv6);
  if (embedded.length > 0) return embedded.some((v4) => v4.range() !== 'unicast');
  return address.range() !== 'unicast';
}

const hostAllowed = (policy: UrlPolicy, host: string) => {
  const name = host.toLowerCase().replace(/\.$/, '');
  return policy.allowedHosts.some((allowed) =>
    allowed.startsWith('*.') ? name.endsWith(allowed.slice(1)) : name === allowed,
  );
};

const addressAllowed = (policy: UrlPolicy, text: string) => {
  if (!policy.denyInternal || !isInternalAddress(text)) return true;
  const address = ipaddr.process(text);
  return policy.allowedNetworks.some(
    ([network, prefix]) => network.kind() === address.kind() && address.match(network, prefix),
  );
};

const refusal = (host: string, address: string) =>
  `host ${host} is a private, loopback or otherwise internal address (${address}); ` +
  'this deployment sends notifications there only when WEBHOOK_ALLOW_HOSTS lists it';

/**
 * Throws UnsafeUrlError unless the URL is http(s) and its host allowed: listed by name, or an address that is public
 * or in a listed network. The URL parser has already turned `0x7f.1`, `2130706433` or `127.1` into `127.0.0.1`. With
 * `resolveNames`, a host name is resolved and every address it has must be allowed; one that does not resolve passes,
 * since the connection checks the addresses it resolves anyway (checkedLookup) and the name may not exist yet.
 */
export async function assertAllowedUrl(policy: UrlPolicy, url: string, resolveNames: boolean): Promise<void> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UnsafeUrlError('must be a valid URL');
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new UnsafeUrlError('must be an http(s) URL');
  const host = parsed.hostname.replace(/^\[(.*)\]$/, '$1');
  if (!policy.denyInternal || hostAllowed(policy, host)) return;
  const isAddress = net.isIP(host) !== 0;
  if (!isAddress && !resolveNames) return;
  const addresses = isAddress
    ? [host]
    : await resolve(host, { all: true, verbatim: true }).then(
        (found) => found.map((entry) => entry.address),
        () => [],
      );
  const blocked = addresses.find((address) => !addressAllowed(policy, address));
  if (blocked !== undefined) throw new UnsafeUrlError(refusal(host, blocked));
}

/** A connection to an address the policy refuses. */
export class RefusedAddressError extends Error {
  readonly code = 'EREFUSEDADDRESS';
}

/**
 * DNS resolution for the connection itself: it resolves once and hands the connection only addresses it checked,
 * so a name cannot resolve to a public address for the check and to an internal one for the connection (DNS
 * rebinding). A listed host name resolves as usual.
 */
export function checkedLookup(policy: UrlPolicy): LookupFunction {
  return (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, '', 0);
      const blocked = hostAllowed(policy, hostname)
        ? undefined
        : addresses.find((entry) => !addressAllowed(policy, entry.address));
      if (blocked) return callback(new RefusedAddressError(refusal(hostname, blocked.address)), '', 0);
      if (addresses.length === 0)
        return callback(Object.assign(new Error(`host ${hostname} has no address`), { code: 'ENOTFOUND' }), '', 0);
      if (options.all)
        return (callback as unknown as (error: null, addresses: dns.LookupAddress[]) => void)(null, addresses);
      return callback(null, addresses[0].address, addresses[0].family);
    });
  };
}
