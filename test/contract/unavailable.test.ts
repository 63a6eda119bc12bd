import { createServer } from 'node:net';
import { createApiHandler } from '@sluice/api';
import { ControlStore, createDocumentClient, generateApiKey } from '@sluice/control';
import { SecretSealer } from '@sluice/secrets';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAuthorizer } from '../../functions/authorizer/authorize.js';
import { handler as authorizerHandler } from '../../functions/authorizer/handler.js';
import type { ApiFunction } from '@sluice/local';
import { ApiClient } from '../helpers/api-client.js';
import {
  type ContractHarness,
  startContractHarness,
  type TestWorkspace,
} from '../helpers/contract-harness.js';
import { kmsKey, localBucketOrigins } from '../helpers/tables.js';

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

let deadStore: ControlStore;
let liveHarness: ContractHarness;
let deadKeyStoreHarness: ContractHarness;
let ws: TestWorkspace;

beforeAll(async () => {
  const port = await closedPort();
  deadStore = new ControlStore({
    client: createDocumentClient({ endpoint: `http://127.0.0.1:${port}`, maxAttempts: 1 }),
    tableName: process.env.SLUICE_CONTROL_TABLE!,
  });
  const deadApi = createApiHandler({
    store: deadStore,
    sealer: new SecretSealer(kmsKey),
    allowedEndpoints: localBucketOrigins,
  }) as unknown as ApiFunction;
  // The real authorizer, the API's database unreachable.
  liveHarness = await startContractHarness({ handlers: { authorizer: authorizerHandler, api: deadApi } });
  // The authorizer's key store unreachable too.
  deadKeyStoreHarness = await startContractHarness({
    handlers: { authorizer: createAuthorizer(deadStore), api: deadApi },
  });
  ws = await liveHarness.newWorkspace();
});

afterAll(async () => {
  expect(await deadKeyStoreHarness.closeAndFindLeaks()).toEqual([]);
  expect(await liveHarness.closeAndFindLeaks()).toEqual([]);
});

function expectUnavailable(response: Awaited<ReturnType<ApiClient['get']>>): void {
  expect(response.status).toBe(503);
  expect(response.headers.get('retry-after')).toBe('1');
  expect(response.body).toEqual({
    success: false,
    error: 'The service could not reach its database for a moment. Retry the request.',
    code: 'SERVICE_UNAVAILABLE',
    retryable: true,
  });
}

describe('503 SERVICE_UNAVAILABLE when DynamoDB cannot be reached', () => {
  it('answers 503 with Retry-After when the database behind the API is down', async () => {
    const client = new ApiClient(liveHarness.url, ws.client.apiKey);
    expectUnavailable(await client.get('/data-exports'));
    expectUnavailable(await client.get('/data-exports/exp_000000000000000000000000'));
    expectUnavailable(await client.post('/data-exports/exp_000000000000000000000000/run'));
  });

  it('answers 503 after a passing connection test when the save fails, in the error format', async () => {
    const client = new ApiClient(liveHarness.url, ws.client.apiKey);
    expectUnavailable(await client.post('/data-exports', liveHarness.createBody()));
  });

  it('answers 503, not 401, when the key store cannot be read', async () => {
    const client = new ApiClient(deadKeyStoreHarness.url, generateApiKey());
    expectUnavailable(await client.get('/data-exports'));
  });

  it('still answers 401 at once for a malformed key, without a database read', async () => {
    const client = new ApiClient(deadKeyStoreHarness.url, 'slk_not-a-real-key');
    const response = await client.get('/data-exports');
    expect(response.status).toBe(401);
  });
});
