import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ContractHarness,
  startContractHarness,
  type TestWorkspace,
  uniqueId,
} from '../helpers/contract-harness.js';

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
    expect(response.body.error).toMatch(/key/i);
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
