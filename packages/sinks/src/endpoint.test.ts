import { ConnectionFailedError, InvalidInputError } from '@sluice/core';
import { describe, expect, it, vi } from 'vitest';
import {
  assertEndpointResolvesPublic,
  isAllowListedEndpoint,
  isPublicAddress,
  parseAllowedEndpoints,
  parseEndpoint,
  type Resolver,
} from './endpoint.js';

const noAllowList = { allowedEndpoints: new Set<string>() };

function refusal(input: string): InvalidInputError {
  try {
    parseEndpoint(input, noAllowList);
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidInputError);
    return error as InvalidInputError;
  }
  throw new Error(`${input} was accepted`);
}

/** A resolver that answers from a table, as DNS would; unknown names are ENOTFOUND. */
function fakeResolver(table: Record<string, string[]>): Resolver {
  return async (hostname) => {
    const addresses = table[hostname];
    if (!addresses)
      throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
}

describe('parseEndpoint', () => {
  it.each([
    ['loopback', 'https://127.0.0.1'],
    ['loopback with a port', 'https://127.0.0.1:9000'],
    ['localhost', 'https://localhost'],
    ['localhost with a trailing dot', 'https://localhost.'],
    ['a .localhost name', 'https://s3.localhost'],
    ['10/8', 'https://10.0.0.1'],
    ['172.16/12', 'https://172.16.0.1'],
    ['172.31.255.255', 'https://172.31.255.255'],
    ['192.168/16', 'https://192.168.1.10'],
    ['cloud metadata', 'https://169.254.169.254'],
    ['100.64/10', 'https://100.64.0.1'],
    ['0.0.0.0', 'https://0.0.0.0'],
    ['IPv6 loopback', 'https://[::1]'],
    ['IPv4-mapped IPv6 loopback', 'https://[::ffff:127.0.0.1]'],
    ['IPv4-mapped IPv6 private', 'https://[::ffff:10.0.0.1]'],
    ['fc00::/7', 'https://[fd12:3456::1]'],
    ['fe80::/10', 'https://[fe80::1]'],
    ['NAT64 of a private address', 'https://[64:ff9b::a00:1]'],
    ['decimal IPv4', 'https://2130706433'],
    ['octal IPv4', 'https://0177.0.0.1'],
    ['hex IPv4', 'https://0x7f000001'],
    ['short-form IPv4', 'https://127.1'],
    ['plain http', 'http://s3.example.com'],
    ['another scheme', 'ftp://s3.example.com'],
    ['user info', 'https://user:secret@s3.example.com'],
    ['user name only', 'https://user@s3.example.com'],
    ['a path', 'https://s3.example.com/bucket'],
    ['a query', 'https://s3.example.com/?x=1'],
    ['an empty query', 'https://s3.example.com?'],
    ['a fragment', 'https://s3.example.com#x'],
    ['a single-label name', 'https://minio'],
    ['an underscore', 'https://my_host.example.com'],
    ['a label starting with a hyphen', 'https://-a.example.com'],
    ['not a URL', 's3.example.com'],
    ['empty', ''],
  ])('refuses %s (%s)', (_label, input) => {
    const error = refusal(input);
    expect(error.retryable).toBe(false);
    expect(error.issues?.[0]?.path).toBe('endpoint');
    expect(error.issues?.[0]?.message).toBe(error.message);
  });

  it.each([
    ['https://s3.example.com', 'https://s3.example.com'],
    ['https://S3.Example.COM/', 'https://s3.example.com'],
    ['  https://abc123.r2.cloudflarestorage.com  ', 'https://abc123.r2.cloudflarestorage.com'],
    ['https://minio.example.com:9000', 'https://minio.example.com:9000'],
    ['https://s3.example.com:443', 'https://s3.example.com'],
    ['https://8.8.8.8', 'https://8.8.8.8'],
    ['https://[2606:4700::1111]', 'https://[2606:4700::1111]'],
  ])('accepts %s as %s', (input, origin) => {
    expect(parseEndpoint(input, noAllowList)).toBe(origin);
  });

  it('accepts an allow-listed plain-http loopback origin, and only that exact origin', () => {
    const allowedEndpoints = new Set(['http://127.0.0.1:4569']);
    expect(parseEndpoint('http://127.0.0.1:4569', { allowedEndpoints })).toBe('http://127.0.0.1:4569');
    expect(parseEndpoint('http://127.0.0.1:4569/', { allowedEndpoints })).toBe('http://127.0.0.1:4569');
    expect(() => parseEndpoint('http://127.0.0.1:4570', { allowedEndpoints })).toThrow(InvalidInputError);
    expect(() => parseEndpoint('http://localhost:4569', { allowedEndpoints })).toThrow(InvalidInputError);
    expect(() => parseEndpoint('http://127.0.0.1:4569/x', { allowedEndpoints })).toThrow(InvalidInputError);
    expect(() => parseEndpoint('http://u:p@127.0.0.1:4569', { allowedEndpoints })).toThrow(InvalidInputError);
  });

  it('exempts no origin by default, whatever the environment says', async () => {
    // Prepare: the variable that used to switch the checks off, set for the local s3rver, then a fresh load
    const local = 'http://127.0.0.1:4569';
    vi.stubEnv('SLUICE_ALLOWED_ENDPOINTS', local);
    vi.resetModules();
    try {
      // Act
      const fresh = await import('./endpoint.js');
      // Assess
      expect(fresh.NO_ALLOWED_ENDPOINTS.size).toBe(0);
      expect(fresh.isAllowListedEndpoint(local)).toBe(false);
      expect(() => fresh.parseEndpoint(local)).toThrow('Endpoint must use https.');
      await expect(fresh.assertEndpointResolvesPublic(local)).rejects.toThrow('Endpoint must use https.');
    } finally {
      vi.unstubAllEnvs();
    }
  });
});

describe('parseAllowedEndpoints', () => {
  it('normalizes comma-separated origins and skips blanks', () => {
    expect([...parseAllowedEndpoints(' http://127.0.0.1:4569/ ,, https://A.example.com ')]).toEqual([
      'http://127.0.0.1:4569',
      'https://a.example.com',
    ]);
    expect(parseAllowedEndpoints(undefined).size).toBe(0);
  });

  it('fails fast on an entry that is not an origin', () => {
    expect(() => parseAllowedEndpoints('127.0.0.1:4569')).toThrow(/Allowed endpoint/);
    expect(() => parseAllowedEndpoints('http://127.0.0.1:4569/path')).toThrow(/Allowed endpoint/);
  });

  it('matches exact origins only', () => {
    const allowed = parseAllowedEndpoints('http://127.0.0.1:4569');
    expect(isAllowListedEndpoint('http://127.0.0.1:4569', allowed)).toBe(true);
    expect(isAllowListedEndpoint('https://127.0.0.1:4569', allowed)).toBe(false);
    expect(isAllowListedEndpoint('not a url', allowed)).toBe(false);
  });
});

describe('isPublicAddress', () => {
  it.each([
    '127.0.0.1',
    '127.255.255.254',
    '10.0.0.1',
    '172.16.0.1',
    '172.31.0.1',
    '192.168.0.1',
    '169.254.169.254',
    '100.64.0.1',
    '100.127.255.255',
    '0.0.0.0',
    '0.1.2.3',
    '192.0.0.8',
    '192.0.2.1',
    '198.18.0.1',
    '198.19.255.255',
    '198.51.100.7',
    '203.0.113.9',
    '224.0.0.1',
    '239.255.255.250',
    '240.0.0.1',
    '255.255.255.255',
    '::',
    '::1',
    '[::1]',
    '::ffff:127.0.0.1',
    '::ffff:169.254.169.254',
    '::ffff:192.168.0.1',
    '::127.0.0.1',
    'fc00::1',
    'fdff:ffff::1',
    'fe80::1',
    'fe80::1%eth0',
    'febf::1',
    'ff02::1',
    '64:ff9b::7f00:1',
    '64:ff9b::a9fe:a9fe',
    '2001:db8::1',
    '2002:7f00:1::1',
    '100::1',
    '2130706433',
    '0177.0.0.1',
    '0x7f000001',
    '1.2.3',
    'localhost',
    '',
  ])('refuses %s', (ip) => {
    expect(isPublicAddress(ip)).toBe(false);
  });

  it.each([
    '8.8.8.8',
    '1.1.1.1',
    '52.216.0.1',
    '172.15.255.255',
    '172.32.0.1',
    '100.128.0.1',
    '::ffff:8.8.8.8',
    '2606:4700::1111',
    '[2a00:1450:4001::1]',
  ])('allows %s', (ip) => {
    expect(isPublicAddress(ip)).toBe(true);
  });
});

describe('assertEndpointResolvesPublic', () => {
  const resolve = fakeResolver({
    'public.example.com': ['52.216.1.2', '2600:1f18::1'],
    'private.example.com': ['10.1.2.3'],
    'metadata.example.com': ['169.254.169.254'],
    'mixed.example.com': ['52.216.1.2', '127.0.0.1'],
    'v6-loopback.example.com': ['::1'],
    'mapped.example.com': ['::ffff:192.168.1.1'],
  });

  it('allows a name whose every address is public', async () => {
    await expect(
      assertEndpointResolvesPublic('https://public.example.com', { ...noAllowList, resolve }),
    ).resolves.toBe(undefined);
  });

  it.each(['private', 'metadata', 'mixed', 'v6-loopback', 'mapped'])(
    'refuses a name that resolves to a non-public address (%s)',
    async (name) => {
      const promise = assertEndpointResolvesPublic(`https://${name}.example.com`, {
        ...noAllowList,
        resolve,
      });
      await expect(promise).rejects.toBeInstanceOf(InvalidInputError);
      await expect(promise).rejects.toMatchObject({
        issues: [{ path: 'endpoint' }],
        message: expect.stringContaining('only public addresses are allowed'),
      });
    },
  );

  it('says the endpoint is unreachable when the name does not resolve', async () => {
    const promise = assertEndpointResolvesPublic('https://nowhere.example.com', { ...noAllowList, resolve });
    await expect(promise).rejects.toBeInstanceOf(ConnectionFailedError);
    await expect(promise).rejects.toThrow(
      'Could not resolve the endpoint host "nowhere.example.com" (ENOTFOUND)',
    );
  });

  it('refuses localhost with the system resolver too', async () => {
    await expect(assertEndpointResolvesPublic('https://localhost', noAllowList)).rejects.toBeInstanceOf(
      InvalidInputError,
    );
  });

  it('resolves nothing for an allow-listed origin', async () => {
    const never: Resolver = () => Promise.reject(new Error('must not resolve'));
    await expect(
      assertEndpointResolvesPublic('http://127.0.0.1:4569', {
        allowedEndpoints: new Set(['http://127.0.0.1:4569']),
        resolve: never,
      }),
    ).resolves.toBe(undefined);
  });
});
