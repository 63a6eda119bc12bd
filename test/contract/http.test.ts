import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ContractHarness,
  startContractHarness,
  type TestWorkspace,
} from '../helpers/contract-harness.js';

let harness: ContractHarness;
let ws: TestWorkspace;

beforeAll(async () => {
  harness = await startContractHarness();
  ws = await harness.newWorkspace();
});

afterAll(async () => {
  expect((await ws.client.get('/data-exports')).body.dataExports).toEqual([]);
  expect(await harness.closeAndFindLeaks()).toEqual([]);
});

describe('request bodies', () => {
  it('refuses malformed JSON with 400 invalid_json, without echoing the body', async () => {
    const raw = '{"name": "x", "secretAccessKey": "S3RVER",';
    const response = await ws.client.post('/data-exports', undefined, {
      rawBody: raw,
      headers: { 'content-type': 'application/json' },
    });
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({
      success: false,
      code: 'invalid_json',
      error: 'The request body is not valid JSON.',
    });
  });

  it('refuses an empty body with 400 invalid_json', async () => {
    const response = await ws.client.post('/data-exports', undefined, {
      headers: { 'content-type': 'application/json' },
    });
    expect(response.status).toBe(400);
    expect(response.body.code).toBe('invalid_json');
  });

  it('refuses a body that is not JSON with 415', async () => {
    const response = await ws.client.post('/data-exports', undefined, {
      rawBody: 'name=x&provider=s3',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(response.status).toBe(415);
    expect(response.body.code).toBe('unsupported_media_type');
  });

  it('refuses a body without a content type with 415', async () => {
    const response = await ws.client.patch('/data-exports/exp_000000000000000000000000', undefined, {
      rawBody: JSON.stringify({ name: 'x' }),
    });
    expect(response.status).toBe(415);
  });

  it('accepts a JSON content type with a charset', async () => {
    const response = await ws.client.post('/data-exports', undefined, {
      rawBody: JSON.stringify({ name: 42 }),
      headers: { 'content-type': 'application/json; charset=utf-8' },
    });
    expect(response.status).toBe(422);
  });

  it('refuses a body over 64 KB with 413 from the API', async () => {
    const response = await ws.client.post(
      '/data-exports',
      harness.createBody({ name: 'x'.repeat(70 * 1024) }),
    );
    expect(response.status).toBe(413);
    expect(response.body.code).toBe('payload_too_large');
  });

  it('refuses a body over 10 MB at the gateway, as API Gateway does', async () => {
    const response = await ws.client.post('/data-exports', undefined, {
      rawBody: Buffer.alloc(10 * 1024 * 1024 + 1, 0x20),
      headers: { 'content-type': 'application/json' },
      skipContract: true,
    });
    expect(response.status).toBe(413);
  });
});

describe('routes', () => {
  it('answers an unknown path with 404 in the error format', async () => {
    for (const path of ['/nothing', '/data-exports/a/b/c', '/data-exports/exp_1/unknown']) {
      const response = await ws.client.get(path);
      expect(response.status, path).toBe(404);
      expect(response.body.success).toBe(false);
    }
  });

  it('answers a request target that is no URL path (`//@`, found by the fuzz suite) with 404, not 500', async () => {
    // node:http sends the target as given (fetch would normalise it).
    const { port } = new URL(harness.url);
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(
        { host: '127.0.0.1', port, path: '//@', headers: { authorization: `Bearer ${ws.client.apiKey}` } },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      req.end();
    });
    expect(status).toBe(404);
  });

  it('answers a wrong method with 405 and Allow', async () => {
    const response = await ws.client.request('PUT', '/data-exports');
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('GET, POST');
    const onItem = await ws.client.request('POST', '/data-exports/exp_000000000000000000000000');
    expect(onItem.status).toBe(405);
    expect(onItem.headers.get('allow')).toBe('GET, PATCH, DELETE');
  });

  it('ignores a query string on routes that take none', async () => {
    const response = await ws.client.get('/data-exports?page=2');
    expect(response.status).toBe(200);
  });
});
