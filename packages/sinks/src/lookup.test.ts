import type { LookupAddress } from 'node:dns';
import { Agent, request } from 'node:https';
import { createServer, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Resolver } from './endpoint.js';
import { createPinnedLookup, UNSAFE_ADDRESS_CODE } from './lookup.js';

const table: Record<string, LookupAddress[]> = {
  'public.example.com': [
    { address: '52.216.1.2', family: 4 },
    { address: '2600:1f18::1', family: 6 },
  ],
  'rebind.example.com': [
    { address: '52.216.1.2', family: 4 },
    { address: '127.0.0.1', family: 4 },
  ],
  'private.example.com': [{ address: '10.0.0.7', family: 4 }],
};
const resolve: Resolver = async (hostname) => {
  const entry = table[hostname];
  if (!entry) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
  return entry;
};

function lookup(hostname: string, options: { all?: boolean; family?: number }) {
  const pinned = createPinnedLookup({ resolve });
  return new Promise<{ error: NodeJS.ErrnoException | null; address: unknown; family: unknown }>((done) => {
    pinned(hostname, options, (error, address, family) => done({ error, address, family }));
  });
}

describe('createPinnedLookup', () => {
  it('returns every address when asked for all (happy eyeballs)', async () => {
    const result = await lookup('public.example.com', { all: true });
    expect(result.error).toBeNull();
    expect(result.address).toEqual(table['public.example.com']);
  });

  it('returns one address and its family otherwise', async () => {
    const result = await lookup('public.example.com', {});
    expect(result.error).toBeNull();
    expect(result.address).toBe('52.216.1.2');
    expect(result.family).toBe(4);
  });

  it.each(['rebind.example.com', 'private.example.com', 'localhost'])(
    'refuses %s with EUNSAFEADDRESS',
    async (name) => {
      const pinned = createPinnedLookup(name === 'localhost' ? {} : { resolve });
      const error = await new Promise<NodeJS.ErrnoException | null>((done) => {
        pinned(name, { all: true }, (err) => done(err));
      });
      expect(error?.code).toBe(UNSAFE_ADDRESS_CODE);
    },
  );

  it('checks an IP literal without resolving it', async () => {
    const result = await lookup('169.254.169.254', {});
    expect(result.error?.code).toBe(UNSAFE_ADDRESS_CODE);
  });

  it('passes resolver errors through', async () => {
    const result = await lookup('nowhere.example.com', { all: true });
    expect(result.error?.code).toBe('ENOTFOUND');
  });
});

describe('an https agent with the pinned lookup', () => {
  let server: Server;
  let port = 0;
  let connections = 0;

  beforeAll(async () => {
    server = createServer((socket) => {
      connections += 1;
      socket.destroy();
    });
    await new Promise<void>((ready) => server.listen(0, '127.0.0.1', ready));
    port = (server.address() as { port: number }).port;
  });
  afterAll(async () => {
    await new Promise((closed) => server.close(closed));
  });

  it.each([true, false])(
    'never connects to a name that resolves to loopback (autoSelectFamily %s)',
    async (autoSelectFamily) => {
      // Prepare: a resolver that maps a public-looking name onto the local server.
      const toLoopback: Resolver = async () => [{ address: '127.0.0.1', family: 4 }];
      const agent = new Agent({ keepAlive: true, lookup: createPinnedLookup({ resolve: toLoopback }) });
      // Act
      const error = await new Promise<NodeJS.ErrnoException>((done) => {
        const req = request({ host: 'bucket.example.com', port, agent, autoSelectFamily } as never, () =>
          done(new Error('unexpected response') as NodeJS.ErrnoException),
        );
        req.on('error', done);
        req.end();
      });
      agent.destroy();
      // Assess
      expect(error.code).toBe(UNSAFE_ADDRESS_CODE);
      expect(connections).toBe(0);
    },
  );
});
