import { promises as dns, type LookupAddress } from 'node:dns';
import { ConnectionFailedError, InvalidInputError } from '@sluice/core';
import ipaddr from 'ipaddr.js';

/**
 * Resolves a host name to all of its addresses, like `dns.lookup(hostname, { all: true })`.
 * Injected in tests so that "a name that resolves to a private address" needs no DNS server.
 */
export type Resolver = (hostname: string, options?: { family?: number }) => Promise<LookupAddress[]>;

/** The system resolver: `dns.lookup` with `all: true`, the same resolution the socket would use. */
export const systemResolver: Resolver = (hostname, options = {}) =>
  dns.lookup(hostname, { all: true, family: options.family ?? 0 });

/**
 * Addresses refused even where ipaddr.js calls them `unicast`. ipaddr.js already puts most of these in a
 * named range (and only `unicast` is public); the list is explicit so that the rule does not depend on the
 * library's range table alone.
 */
const DENIED_CIDRS: ReadonlyArray<[ipaddr.IPv4 | ipaddr.IPv6, number]> = [
  // IPv4
  '0.0.0.0/8', // "this network"
  '10.0.0.0/8', // private
  '100.64.0.0/10', // carrier-grade NAT
  '127.0.0.0/8', // loopback
  '169.254.0.0/16', // link-local, cloud metadata (169.254.169.254)
  '172.16.0.0/12', // private
  '192.0.0.0/24', // IETF protocol assignments
  '192.0.2.0/24', // TEST-NET-1
  '192.88.99.0/24', // 6to4 relay anycast
  '192.168.0.0/16', // private
  '198.18.0.0/15', // benchmarking
  '198.51.100.0/24', // TEST-NET-2
  '203.0.113.0/24', // TEST-NET-3
  '224.0.0.0/4', // multicast
  '240.0.0.0/4', // reserved, broadcast
  // IPv6
  '::/128', // unspecified
  '::1/128', // loopback
  '::/96', // IPv4-compatible (deprecated)
  '::ffff:0:0/96', // IPv4-mapped (checked as IPv4 before this list)
  '64:ff9b::/96', // NAT64: may embed any IPv4 address, private ones included
  '64:ff9b:1::/48', // local-use NAT64
  '100::/64', // discard
  '2001::/23', // IETF protocol assignments (Teredo included)
  '2001:db8::/32', // documentation
  '2002::/16', // 6to4: embeds an IPv4 address
  'fc00::/7', // unique local
  'fe80::/10', // link-local
  'fec0::/10', // site-local (deprecated)
  'ff00::/8', // multicast
].map((cidr) => ipaddr.parseCIDR(cidr));

/** IPv6 global unicast is 2000::/3; anything outside it is not a public address. */
const IPV6_GLOBAL_UNICAST = ipaddr.parseCIDR('2000::/3');

/**
 * Whether `ip` is a public unicast address that Sluice may connect to.
 *
 * Only ipaddr.js's `unicast` range counts as public, an IPv4-mapped IPv6 address is checked as the IPv4
 * address it maps, IPv6 must be global unicast (2000::/3), and the explicit deny list applies on top.
 * Anything that does not parse as an address (a host name, an empty string) is not public.
 *
 * @param ip an IPv4 or IPv6 address, IPv6 with or without brackets
 */
export function isPublicAddress(ip: string): boolean {
  const literal = ip.startsWith('[') && ip.endsWith(']') ? ip.slice(1, -1) : ip;
  // Only canonical forms: a resolver returns dotted-quad IPv4; `1.2.3` or `0177.0.0.1` here is refused.
  if (!ipaddr.IPv4.isValidFourPartDecimal(literal) && !ipaddr.IPv6.isValid(literal)) return false;
  let address: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    address = ipaddr.parse(literal);
  } catch {
    return false;
  }
  if (address.kind() === 'ipv6') {
    const v6 = address as ipaddr.IPv6;
    if (v6.zoneId) return false; // a zone id only makes sense for link-local addresses
    if (v6.isIPv4MappedAddress()) address = v6.toIPv4Address();
  }
  if (address.range() !== 'unicast') return false;
  if (address.kind() === 'ipv6' && !address.match(IPV6_GLOBAL_UNICAST)) return false;
  return !DENIED_CIDRS.some(([range, bits]) => range.kind() === address.kind() && address.match(range, bits));
}

/**
 * Parses a comma-separated list of origins into an allow-list for {@link EndpointPolicyOptions}; throws on an
 * entry that is not an http(s) origin.
 */
export function parseAllowedEndpoints(value: string | undefined): ReadonlySet<string> {
  const origins = new Set<string>();
  for (const raw of (value ?? '').split(',')) {
    const entry = raw.trim();
    if (entry === '') continue;
    let url: URL;
    try {
      url = new URL(entry);
    } catch {
      throw new Error(`Allowed endpoint "${entry}" is not a URL`);
    }
    if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.pathname !== '/' || url.search) {
      throw new Error(`Allowed endpoint "${entry}" is not an http(s) origin`);
    }
    origins.add(url.origin);
  }
  return origins;
}

/**
 * The default allow-list: empty, so every endpoint is checked. No environment variable changes it: only the
 * local runtime passes its own s3rver's origin (plain http on 127.0.0.1) as an explicit option, through the
 * function factories it builds; the deployed handlers never pass one.
 */
export const NO_ALLOWED_ENDPOINTS: ReadonlySet<string> = new Set<string>();

/** Options shared by the endpoint checks; the local runtime and tests pass their own allow-list and resolver. */
export interface EndpointPolicyOptions {
  /** Origins exempt from the endpoint rules (exact origin match). @default NO_ALLOWED_ENDPOINTS */
  allowedEndpoints?: ReadonlySet<string>;
  /** @default systemResolver */
  resolve?: Resolver;
}

/** Whether `origin` is on the allow-list (exact origin match after normalization). */
export function isAllowListedEndpoint(
  origin: string,
  allowedEndpoints: ReadonlySet<string> = NO_ALLOWED_ENDPOINTS,
): boolean {
  try {
    return allowedEndpoints.has(new URL(origin).origin);
  } catch {
    return false;
  }
}

const RESERVED_NAME_SUFFIXES = ['localhost', 'local', 'internal', 'home.arpa', 'localdomain'];
const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

function refuse(message: string): InvalidInputError {
  return new InvalidInputError(message, [{ path: 'endpoint', message }]);
}

/** Throws unless `hostname` (as the WHATWG parser left it: lower case, punycode) is a valid public DNS name. */
function checkHostName(hostname: string): void {
  const name = hostname.replace(/\.$/, '');
  if (RESERVED_NAME_SUFFIXES.some((suffix) => name === suffix || name.endsWith(`.${suffix}`))) {
    throw refuse(`Endpoint host "${name}" is a local name; the endpoint must be reachable on the internet.`);
  }
  if (hostname.endsWith('.')) throw refuse('Endpoint host must not end with a dot.');
  if (hostname.length > 253) throw refuse('Endpoint host name is too long.');
  const labels = hostname.split('.');
  if (labels.length < 2 || !labels.every((label) => LABEL.test(label))) {
    throw refuse(`Endpoint host "${hostname}" is not a valid host name.`);
  }
  if (/^[0-9]+$/.test(labels.at(-1) ?? '')) {
    throw refuse(`Endpoint host "${hostname}" is not a valid host name.`);
  }
}

/** The IP address a WHATWG-normalized hostname denotes, or undefined for a DNS name. */
function ipLiteral(hostname: string): string | undefined {
  if (hostname.startsWith('[') && hostname.endsWith(']')) return hostname.slice(1, -1);
  // The URL parser has already turned 2130706433, 0177.0.0.1 and 0x7f000001 into 127.0.0.1.
  return ipaddr.IPv4.isValidFourPartDecimal(hostname) ? hostname : undefined;
}

/**
 * Validates an S3-compatible endpoint and returns its normalized origin (`https://host[:port]`).
 *
 * Rules: an absolute `https:` URL; no user info; no path other than `/`; no query or fragment; a
 * syntactically valid, non-local host name, or an IP literal (in any notation the WHATWG URL parser
 * accepts) that is a public address. An origin on the allow-list is accepted as is (plain http included).
 * This does not resolve the name: see {@link assertEndpointResolvesPublic}.
 *
 * @throws InvalidInputError with an `endpoint` issue
 */
export function parseEndpoint(input: string, options: EndpointPolicyOptions = {}): string {
  const text = input.trim();
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw refuse('Endpoint must be an absolute HTTPS URL such as https://s3.example.com.');
  }
  if (url.username !== '' || url.password !== '') {
    throw refuse('Endpoint must not contain a user name or password; send credentials as the access key.');
  }
  if (url.pathname !== '/' && url.pathname !== '') {
    throw refuse('Endpoint must be an origin without a path, such as https://s3.example.com.');
  }
  if (url.search !== '' || url.hash !== '' || text.includes('?') || text.includes('#')) {
    throw refuse('Endpoint must not contain a query or a fragment.');
  }
  if (isAllowListedEndpoint(url.origin, options.allowedEndpoints)) return url.origin;
  if (url.protocol !== 'https:') {
    throw refuse('Endpoint must use https.');
  }
  const ip = ipLiteral(url.hostname);
  if (ip !== undefined) {
    if (!isPublicAddress(ip)) {
      throw refuse(
        'Endpoint must be a public address; private, loopback and reserved addresses are refused.',
      );
    }
  } else {
    checkHostName(url.hostname);
  }
  return url.origin;
}

/**
 * Resolves the endpoint's host name to all of its addresses and refuses it if any one is not public.
 * An allow-listed origin and an IP literal (already checked by {@link parseEndpoint}) resolve nothing.
 *
 * The check here gives the customer a clear answer up front; the pinned lookup on the connection
 * ({@link createPinnedLookup}) is what makes it hold at connect time.
 *
 * @param origin an origin returned by {@link parseEndpoint}
 * @throws InvalidInputError (`endpoint` issue) when an address is not public
 * @throws ConnectionFailedError when the name does not resolve
 */
export async function assertEndpointResolvesPublic(
  origin: string,
  options: EndpointPolicyOptions = {},
): Promise<void> {
  const checked = parseEndpoint(origin, options);
  if (isAllowListedEndpoint(checked, options.allowedEndpoints)) return;
  const { hostname } = new URL(checked);
  if (ipLiteral(hostname) !== undefined) return;
  const resolve = options.resolve ?? systemResolver;
  let addresses: LookupAddress[];
  try {
    addresses = await resolve(hostname);
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    throw new ConnectionFailedError(
      `Could not resolve the endpoint host "${hostname}"${typeof code === 'string' ? ` (${code})` : ''}. Check the endpoint.`,
      { cause: error, retryable: code === 'EAI_AGAIN' },
    );
  }
  if (addresses.length === 0) {
    throw new ConnectionFailedError(`The endpoint host "${hostname}" has no addresses. Check the endpoint.`);
  }
  if (!addresses.every((entry) => isPublicAddress(entry.address))) {
    throw refuse(
      `Endpoint host "${hostname}" resolves to a private, loopback or reserved address; only public addresses are allowed.`,
    );
  }
}
