import { describe, expect, it } from 'vitest';
import { startApiServer } from './http-adapter.js';

/** Blocks this process's event loop, as a client script does while it runs other commands synchronously. */
function blockFor(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

describe('startApiServer connections', () => {
  it('answers every request of a client that reuses its connection after idling past a keep-alive timeout', async () => {
    // Prepare: a server whose API answers at once; Node's fetch (undici) pools its connections
    const server = await startApiServer({
      handlers: {
        authorizer: async () => ({ isAuthorized: true }),
        api: async () => ({ statusCode: 200, body: '{"ok":true}' }),
      },
    });
    const failures: string[] = [];
    // Act: a request, then the client idles (its event loop busy elsewhere) past Node's 5 s keep-alive timeout
    // before the next one, many times
    try {
      for (let round = 0; round < 4; round++) {
        try {
          const response = await fetch(`${server.url}/v1/data-exports`);
          await response.text();
        } catch (error) {
          failures.push(`round ${round}: ${(error as Error).message} (${String((error as Error).cause)})`);
        }
        blockFor(5_500);
      }
    } finally {
      await server.close();
    }
    // Assess
    expect(failures).toEqual([]);
  }, 60_000);
});
