import type { LookupAddress, LookupOptions } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import { isPublicAddress, type Resolver, systemResolver } from './endpoint.js';

/** The `code` of the error a pinned lookup fails with when a name resolves to a non-public address. */
export const UNSAFE_ADDRESS_CODE = 'EUNSAFEADDRESS';

/** The error a pinned lookup fails with; the socket never connects. */
export class UnsafeAddressError extends Error {
  readonly code = UNSAFE_ADDRESS_CODE;
  readonly hostname: string;

  constructor(hostname: string) {
    super(`Refusing to connect to "${hostname}": it resolves to a private, loopback or reserved address.`);
    this.name = 'UnsafeAddressError';
    this.hostname = hostname;
  }
}

/**
 * A `lookup` for sockets (node's `dns.lookup` signature) that refuses non-public addresses, so the
 * address checked is the address connected to: there is no second resolution a DNS rebinding could
 * answer differently.
 *
 * It resolves every address of the name and fails with {@link UnsafeAddressError} (`code`
 * `EUNSAFEADDRESS`) if any one is not public. With `options.all` (Node's happy-eyeballs
 * `autoSelectFamily` asks for all) it calls back with the array, otherwise with the first address.
 * Give it to `new https.Agent({ lookup, keepAlive: true })`.
 *
 * @param options.resolve the resolver; defaults to `dns.lookup` with `all: true`
 */
export function createPinnedLookup(options: { resolve?: Resolver } = {}): LookupFunction {
  const resolve = options.resolve ?? systemResolver;
  return (hostname, lookupOptions, callback) => {
    const opts: LookupOptions =
      typeof lookupOptions === 'object' && lookupOptions !== null ? lookupOptions : {};
    const family = typeof opts.family === 'number' ? opts.family : opts.family === 'IPv6' ? 6 : 0;
    const resolved: Promise<LookupAddress[]> =
      isIP(hostname) !== 0
        ? Promise.resolve([{ address: hostname, family: isIP(hostname) }])
        : resolve(hostname, { family: family === 4 || family === 6 ? family : 0 });
    resolved.then(
      (addresses) => {
        if (addresses.length === 0) {
          const error: NodeJS.ErrnoException = new Error(`getaddrinfo ENOTFOUND ${hostname}`);
          error.code = 'ENOTFOUND';
          callback(error, '', 0);
          return;
        }
        if (!addresses.every((entry) => isPublicAddress(entry.address))) {
          callback(new UnsafeAddressError(hostname), '', 0);
          return;
        }
        if (opts.all) {
          callback(null, addresses);
        } else {
          const [first] = addresses as [LookupAddress];
          callback(null, first.address, first.family);
        }
      },
      (error: NodeJS.ErrnoException) => callback(error, '', 0),
    );
  };
}
