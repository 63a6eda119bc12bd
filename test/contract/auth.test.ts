import { generateApiKey } from '@sluice/control';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiClient, ApiResponse } from '../helpers/api-client.js';
import {
  type ContractHarness,
  startContractHarness,
  type TestWorkspace,
} from '../helpers/contract-harness.js';

let harness: ContractHarness;
let a: TestWorkspace;
let b: TestWorkspace;
let exportId: string;

beforeAll(async () => {
  harness = await startContractHarness();
  [a, b] = await Promise.all([harness.newWorkspace(), harness.newWorkspace()]);
  const created = await a.client.post('/data-exports', harness.createBody());
  expect(created.status).toBe(201);
  exportId = created.body.dataExport!.id;
});

afterAll(async () => {
  expect(await harness.closeAndFindLeaks()).toEqual([]);
});

/** One request per operation, for checks that apply to every route. */
function everyOperation(id: string): [string, (client: ApiClient) => Promise<ApiResponse>][] {
  return [
    ['list', (client) => client.get('/data-exports')],
    ['create', (client) => client.post('/data-exports', harness.createBody())],
    ['get', (client) => client.get(`/data-exports/${id}`)],
    ['update', (client) => client.patch(`/data-exports/${id}`, { name: 'Renamed' })],
    ['delete', (client) => client.delete(`/data-exports/${id}`)],
    ['test', (client) => client.post(`/data-exports/${id}/test`)],
    ['run', (client) => client.post(`/data-exports/${id}/run`)],
    ['runs', (client) => client.get(`/data-exports/${id}/runs`)],
  ];
}

describe('401: missing or invalid API key', () => {
  it('refuses a request without a key on every operation, in the API error format', async () => {
    for (const [name, call] of everyOperation(exportId)) {
      const response = await call(harness.anonymous());
      expect(response.status, name).toBe(401);
      expect(response.body).toMatchObject({ success: false, code: 'unauthorized', retryable: false });
      expect(response.body.error).toMatch(/Bearer/);
    }
  });

  it('refuses a malformed key, a key with a typo, an unknown key and another scheme', async () => {
    // Prepare
    const valid = a.client.apiKey!;
    const last = valid.at(-1) === 'a' ? 'b' : 'a';
    const typo = `${valid.slice(0, -1)}${last}`;
    const cases: Record<string, Record<string, string>> = {
      garbage: { authorization: 'Bearer not-a-key' },
      typo: { authorization: `Bearer ${typo}` },
      unknown: { authorization: `Bearer ${generateApiKey()}` },
      basic: { authorization: `Basic ${Buffer.from(`user:${valid}`).toString('base64')}` },
      empty: { authorization: 'Bearer ' },
    };
    for (const [name, headers] of Object.entries(cases)) {
      // Act
      const response = await harness.anonymous().get('/data-exports', { headers });
      // Assess
      expect(response.status, name).toBe(401);
      expect(response.body.code, name).toBe('unauthorized');
    }
  });

  it('answers 401 before routing, so unknown paths reveal nothing without a key', async () => {
    const response = await harness.anonymous().get('/nothing-here');
    expect(response.status).toBe(401);
  });

  it('never logs the key', async () => {
    const key = a.client.apiKey!;
    await a.client.get('/data-exports');
    expect(harness.output.text()).not.toContain(key);
    expect(harness.output.text()).not.toContain(key.slice(4, 20));
  });
});

describe('403: role and scopes', () => {
  it('names the missing scopes for a write', async () => {
    const client = await a.clientWith({
      scopes: ['data_exports:read', 'data_exports:write', 'data_exports:delete'],
    });
    const response = await client.post('/data-exports', harness.createBody());
    expect(response.status).toBe(403);
    expect(response.body).toMatchObject({
      success: false,
      code: 'forbidden',
      error: 'API key is missing required scopes: subscribers:read, analytics:read',
    });
  });

  it('needs data_exports:read to read, data_exports:write to test and run, data_exports:delete to delete', async () => {
    const writeOnly = await a.clientWith({
      scopes: ['data_exports:write', 'subscribers:read', 'analytics:read'],
    });
    const readOnly = await a.clientWith({ scopes: ['data_exports:read'] });
    const expectForbidden = async (promise: Promise<ApiResponse>, scope: string) => {
      const response = await promise;
      expect(response.status).toBe(403);
      expect(response.body.error).toContain(scope);
    };
    await expectForbidden(writeOnly.get('/data-exports'), 'data_exports:read');
    await expectForbidden(writeOnly.get(`/data-exports/${exportId}`), 'data_exports:read');
    await expectForbidden(writeOnly.get(`/data-exports/${exportId}/runs`), 'data_exports:read');
    await expectForbidden(writeOnly.delete(`/data-exports/${exportId}`), 'data_exports:delete');
    await expectForbidden(readOnly.post(`/data-exports/${exportId}/test`), 'data_exports:write');
    await expectForbidden(readOnly.post(`/data-exports/${exportId}/run`), 'data_exports:write');
    await expectForbidden(readOnly.patch(`/data-exports/${exportId}`, { name: 'x' }), 'data_exports:write');
    // Still there, unchanged.
    expect((await a.client.get(`/data-exports/${exportId}`)).body.dataExport!.name).toBe('Analytics lake');
  });

  it('refuses the member role on every operation, whatever its scopes', async () => {
    const member = await a.clientWith({ role: 'member' });
    for (const [name, call] of everyOperation(exportId)) {
      const response = await call(member);
      expect(response.status, name).toBe(403);
      expect(response.body.error).toMatch(/member role cannot manage data exports/);
    }
  });

  it('lets an admin manage exports', async () => {
    const admin = await a.clientWith({ role: 'admin' });
    expect((await admin.get(`/data-exports/${exportId}`)).status).toBe(200);
  });
});

describe('404 and tenancy', () => {
  it('answers 404 for unknown ids, well-formed or not', async () => {
    for (const id of ['exp_000000000000000000000000', 'nope', 'exp_%23WS', encodeURIComponent('exp_a#b')]) {
      for (const [name, call] of everyOperation(id)) {
        if (name === 'list' || name === 'create') continue;
        const response = await call(a.client);
        expect(response.status, `${name} ${id}`).toBe(404);
        expect(response.body.code).toBe('not_found');
      }
    }
  });

  it("gives workspace B a 404 on every operation on A's export, and never lists it", async () => {
    for (const [name, call] of everyOperation(exportId)) {
      if (name === 'create') continue;
      const response = await call(b.client);
      if (name === 'list') {
        expect(response.status).toBe(200);
        expect(response.body.dataExports!.map((item) => item.id)).not.toContain(exportId);
      } else {
        expect(response.status, name).toBe(404);
      }
    }
    // A's export is untouched by B's attempts (B's rename and delete did nothing).
    const own = await a.client.get(`/data-exports/${exportId}`);
    expect(own.status).toBe(200);
    expect(own.body.dataExport!.name).toBe('Analytics lake');
  });
});
