import { CreateBucketCommand, DeleteBucketCommand, DeleteObjectCommand } from '@aws-sdk/client-s3';
import { createApiHandler } from '@sluice/api';
import { SecretSealer } from '@sluice/secrets';
import { endpointFailureMessage, testConnection } from '@sluice/sinks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiFunction } from '@sluice/local';
import { ApiClient } from '../helpers/api-client.js';
import { type SlowBucket, startSlowBucket } from '../helpers/slow-bucket.js';
import {
  type ContractHarness,
  startContractHarness,
  type TestWorkspace,
  uniqueId,
} from '../helpers/contract-harness.js';
import { kmsKey, localBucketOrigins } from '../helpers/tables.js';

let harness: ContractHarness;
let ws: TestWorkspace;

beforeAll(async () => {
  harness = await startContractHarness();
  ws = await harness.newWorkspace();
});

afterAll(async () => {
  // Nothing that failed its test or its endpoint rules was saved.
  expect((await ws.client.get('/data-exports')).body.dataExports).toEqual([]);
  expect(await harness.closeAndFindLeaks()).toEqual([]);
});

describe('connection test on create', () => {
  it('refuses a missing bucket with 400 connection_failed naming it, and saves nothing', async () => {
    // Prepare
    const body = harness.createBody({ bucket: 'no-such-bucket-anywhere' });

    // Act
    const response = await ws.client.post('/data-exports', body);

    // Assess
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ success: false, code: 'connection_failed' });
    expect(response.body.error).toMatch(/no-such-bucket-anywhere/);
    expect((await ws.client.get('/data-exports')).body.dataExports).toEqual([]);
  });

  it('refuses an unknown access key with a message about the key', async () => {
    const secret = uniqueId('unusedSecret');
    harness.secrets.add(secret);
    const response = await ws.client.post(
      '/data-exports',
      harness.createBody({ accessKeyId: 'AKIANOTKNOWN00000000', secretAccessKey: secret }),
    );
    expect(response.status).toBe(400);
    expect(response.body.code).toBe('connection_failed');
    expect(response.body.error).toMatch(/does not recognise the access key ID/);
  });

  it('refuses the right access key with a wrong secret, naming the secret, and saves nothing', async () => {
    // Prepare: the local bucket checks Signature V4 as S3 does
    const secret = uniqueId('wrongSecret');
    harness.secrets.add(secret);
    // Act
    const response = await ws.client.post('/data-exports', harness.createBody({ secretAccessKey: secret }));
    // Assess
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ success: false, code: 'connection_failed' });
    expect(response.body.error).toMatch(/the secret access key is wrong/);
    expect((await ws.client.get('/data-exports')).body.dataExports).toEqual([]);
  });
});

describe('SSRF: endpoints that are not public are refused before anything is saved', () => {
  const s3Port = () => new URL(harness.s3Endpoint).port;
  it.each([
    'https://127.0.0.1',
    'https://localhost',
    'https://10.1.2.3',
    'https://172.16.0.1',
    'https://192.168.1.1',
    'https://169.254.169.254',
    'https://100.64.0.1',
    'https://[::1]',
    'https://[::ffff:127.0.0.1]',
    'https://[fc00::1]',
    'https://[fe80::1]',
    'https://2130706433',
    'https://0177.0.0.1',
    'https://0x7f000001',
    'http://s3.example.com',
    'https://user:pass@s3.example.com',
    'https://metadata.internal',
  ])('refuses %s with 400', async (endpoint) => {
    const response = await ws.client.post('/data-exports', harness.createBody({ endpoint }));
    expect(response.status).toBe(400);
    expect(['invalid_input', 'connection_failed']).toContain(response.body.code);
  });

  it('allows only the exact allow-listed origin: the same host on another port is refused', async () => {
    const other = Number(s3Port()) === 1 ? 2 : Number(s3Port()) - 1;
    const response = await ws.client.post(
      '/data-exports',
      harness.createBody({ endpoint: `http://127.0.0.1:${other}` }),
    );
    expect(response.status).toBe(400);
    expect(response.body.issues?.[0]?.path).toBe('endpoint');
  });
});

describe('SSRF: a name that resolves to a private address', () => {
  let resolving: ContractHarness;
  let client: ApiClient;

  beforeAll(async () => {
    // The real API, with the connection test's resolver answering as a hostile DNS would.
    const { handler: authorizer } = await import('../../functions/authorizer/handler.js');
    const api = createApiHandler({
      store: harness.store,
      sealer: new SecretSealer(kmsKey),
      allowedEndpoints: localBucketOrigins,
      testConnection: (location, credentials, options) =>
        testConnection(location, credentials, {
          ...options,
          resolve: async (hostname) =>
            hostname === 'public.example.com'
              ? [{ address: '93.184.216.34', family: 4 }]
              : [
                  { address: '93.184.216.34', family: 4 },
                  { address: '10.0.0.7', family: 4 },
                ],
        }),
    }) as unknown as ApiFunction;
    resolving = await startContractHarness({ handlers: { authorizer, api } });
    client = new ApiClient(resolving.url, ws.client.apiKey);
  });

  afterAll(async () => {
    expect(await resolving.closeAndFindLeaks()).toEqual([]);
  });

  it('refuses an endpoint with any private address among its answers', async () => {
    const response = await client.post(
      '/data-exports',
      harness.createBody({ endpoint: 'https://rebind.example.com' }),
    );
    expect(response.status).toBe(400);
    expect(response.body.code).toBe('invalid_input');
    expect(response.body.issues?.[0]?.path).toBe('endpoint');
    expect(response.body.error).toMatch(/private/);
  });
});

describe('a bucket host that accepts and then answers one byte at a time', () => {
  let slow: SlowBucket;
  let slowApi: ContractHarness;
  let client: ApiClient;

  beforeAll(async () => {
    // The real API with its connection-test deadline set small; the test's requests reach a host that sends a
    // byte every 100 ms (never idle, never done), as a bucket whose DNS pointed there would.
    slow = await startSlowBucket({ intervalMs: 100, answerFor: () => 'headers' });
    const { handler: authorizer } = await import('../../functions/authorizer/handler.js');
    const api = createApiHandler({
      store: harness.store,
      sealer: new SecretSealer(kmsKey),
      allowedEndpoints: localBucketOrigins,
      connectionTestDeadlineMs: 1_000,
      testConnection: (location, credentials, options) =>
        testConnection({ ...location, endpoint: slow.endpoint }, credentials, {
          ...options,
          allowedEndpoints: new Set([slow.endpoint]),
        }),
    }) as unknown as ApiFunction;
    slowApi = await startContractHarness({ handlers: { authorizer, api } });
    client = new ApiClient(slowApi.url, ws.client.apiKey);
  });

  afterAll(async () => {
    await slow.close();
    expect(await slowApi.closeAndFindLeaks()).toEqual([]);
  });

  it('ends a create at the deadline with 400 connection_failed, the one endpoint message, saving nothing', async () => {
    // Act
    const response = await client.post('/data-exports', harness.createBody());

    // Assess
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ success: false, code: 'connection_failed', retryable: true });
    expect(response.body.error).toBe(endpointFailureMessage(slow.endpoint));
    expect(slow.requests.length).toBeGreaterThan(0);
  });

  it('ends POST /data-exports/{id}/test the same way', async () => {
    // Prepare: an export saved through the ordinary API.
    const created = await ws.client.post('/data-exports', harness.createBody());
    expect(created.status).toBe(201);
    const id = created.body.dataExport!.id;

    // Act
    const response = await client.post(`/data-exports/${id}/test`);

    // Assess
    expect(response.status).toBe(400);
    expect(response.body.code).toBe('connection_failed');
    expect(response.body.error).toBe(endpointFailureMessage(slow.endpoint));
    expect((await ws.client.delete(`/data-exports/${id}`)).status).toBe(200);
  });
});

describe('POST /data-exports/{id}/test', () => {
  it('fails with 400 connection_failed once the bucket is gone, and changes nothing', async () => {
    // Prepare: an export to its own bucket, then the bucket deleted.
    const bucket = uniqueId('gone-');
    await harness.s3.send(new CreateBucketCommand({ Bucket: bucket }));
    const created = await ws.client.post('/data-exports', harness.createBody({ bucket, pathPrefix: '' }));
    expect(created.status).toBe(201);
    const id = created.body.dataExport!.id;
    await harness.s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: '_sluice/connection-test.json' }));
    await harness.s3.send(new DeleteBucketCommand({ Bucket: bucket }));

    // Act
    const response = await ws.client.post(`/data-exports/${id}/test`);

    // Assess
    expect(response.status).toBe(400);
    expect(response.body.code).toBe('connection_failed');
    expect(response.body.error).toContain(bucket);
    expect((await ws.client.get(`/data-exports/${id}`)).body.dataExport).toEqual(created.body.dataExport);
    expect((await ws.client.delete(`/data-exports/${id}`)).status).toBe(200);
  });

  it('cannot open a secret copied from another export (the KMS context binds it)', async () => {
    // Prepare
    const first = (await ws.client.post('/data-exports', harness.createBody())).body.dataExport!.id;
    const second = (await ws.client.post('/data-exports', harness.createBody())).body.dataExport!.id;
    const source = await harness.store.getDestination(ws.workspaceId, first);
    await harness.store.updateDestination(ws.workspaceId, second, { secret: source!.secret });

    // Act
    const response = await ws.client.post(`/data-exports/${second}/test`);

    // Assess
    // Since issue 28: a stored secret that will not open is a clear, non-retryable 409 (not a retryable 500).
    expect(response.status).toBe(409);
    expect(response.body).toMatchObject({ success: false, code: 'secret_rejected', retryable: false });
    expect((await ws.client.post(`/data-exports/${first}/test`)).status).toBe(200);
    for (const id of [first, second])
      expect((await ws.client.delete(`/data-exports/${id}`)).status).toBe(200);
  });
});
