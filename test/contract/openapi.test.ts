import { openapiDocument } from '@sluice/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handler as apiHandler } from '../../functions/api/handler.js';
import type { ApiFunction } from '@sluice/local';
import { ApiClient } from '../helpers/api-client.js';
import { type ContractHarness, startContractHarness } from '../helpers/contract-harness.js';

let harness: ContractHarness;
let brokenAuthorizer: ContractHarness;

beforeAll(async () => {
  harness = await startContractHarness();
  // The real API function behind an authorizer that always fails: only a route without it can answer 200.
  brokenAuthorizer = await startContractHarness({
    handlers: {
      authorizer: async () => {
        throw new Error('the authorizer must not be called');
      },
      api: apiHandler as unknown as ApiFunction,
    },
  });
});

afterAll(async () => {
  expect(await harness.closeAndFindLeaks()).toEqual([]);
  expect(await brokenAuthorizer.closeAndFindLeaks()).toEqual([]);
});

describe('GET /openapi.json', () => {
  it.each(['/api/v1', '/v1'])(
    'serves the document under %s without an API key, cacheable',
    async (prefix) => {
      // Act
      const response = await new ApiClient(harness.url, undefined, prefix).get('/openapi.json');

      // Assess: the ApiClient has checked the body against the document's own getOpenApiDocument
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
      expect(response.headers.get('cache-control')).toBe('public, max-age=300');
      expect(response.body).toEqual(openapiDocument);
    },
  );

  it('answers 304 to a request that sends the current ETag back', async () => {
    // Prepare
    const client = harness.anonymous();
    const first = await client.get('/openapi.json');
    const etag = first.headers.get('etag') ?? '';

    // Act
    const again = await client.get('/openapi.json', {
      headers: { 'if-none-match': etag },
      skipContract: true, // a 304 has no body to check
    });

    // Assess
    expect(etag).toMatch(/^".+"$/);
    expect(again.status).toBe(304);
    expect(again.text).toBe('');
    expect(again.headers.get('etag')).toBe(etag);
  });

  it('never reaches the authorizer, while every other route does', async () => {
    // Act
    const document = await brokenAuthorizer.anonymous().get('/openapi.json');
    const list = await brokenAuthorizer.anonymous().get('/data-exports', { skipContract: true });

    // Assess: the list fails at the gateway (500, its own body), so the authorizer was called for it only
    expect(document.status).toBe(200);
    expect(list.status).toBe(500);
    expect(list.body).toEqual({ message: 'Internal Server Error' });
  });

  it('keeps other methods on the path behind the API key: 401 without one, 405 with one', async () => {
    // Prepare
    const { client } = await harness.newWorkspace();

    // Act
    const anonymous = await harness.anonymous().post('/openapi.json', {});
    const authorized = await client.delete('/openapi.json');

    // Assess
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.code).toBe('unauthorized');
    expect(authorized.status).toBe(405);
    expect(authorized.headers.get('allow')).toBe('GET');
  });
});
