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

describe("npm start's API", () => {
  it('creates an export to the local bucket without a lifecycle warning, which could not apply to it', async () => {
    // Prepare: the local runtime's own handlers, over the global setup's tables and bucket
    const { ControlStore } = await import('@sluice/control');
    const store = new ControlStore({ tableName: process.env.SLUICE_CONTROL_TABLE as string });
    const workspaceId = `ws_adapter${Date.now()}`;
    await store.ensureWorkspace(workspaceId, 'Adapter test');
    const { apiKey } = await store.createApiKey({ workspaceId, role: 'owner' });
    const server = await startApiServer();
    // Act
    let response: Response;
    try {
      response = await fetch(`${server.url}/v1/data-exports`, {
        method: 'POST',
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          name: 'Local bucket',
          provider: 's3',
          bucket: 'local-exports',
          endpoint: process.env.SLUICE_LOCAL_S3_ENDPOINT,
          region: 'us-east-1',
          pathPrefix: `adapter/${workspaceId}`,
          accessKeyId: 'S3RVER',
          secretAccessKey: 'S3RVER',
          datasets: ['email_events'],
          frequency: 'every_5_minutes',
        }),
      });
    } finally {
      await server.close();
    }
    // Assess
    const body = (await response.json()) as { success: boolean; warnings?: unknown };
    expect(response.status).toBe(201);
    expect(body.success).toBe(true);
    expect(body.warnings).toBeUndefined();
  });
});
