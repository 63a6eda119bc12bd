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
  expect(await harness.closeAndFindLeaks()).toEqual([]);
});

/** The local bucket answers NotImplemented to lifecycle requests: Sluice cannot check, and says so. */
const couldNotCheck = [
  {
    code: 'no_abort_incomplete_multipart_rule',
    message: expect.stringContaining('grant s3:GetLifecycleConfiguration'),
  },
];

describe('the lifecycle warning of the connection test', () => {
  it('create, update and test succeed and carry the warning when the lifecycle cannot be read', async () => {
    // Act: create
    const body = harness.createBody();
    const created = await ws.client.post('/data-exports', body);
    // Assess: created, with the warning and the rule to add for its prefix
    expect(created.status).toBe(201);
    expect(created.body.warnings).toEqual(couldNotCheck);
    expect(created.body.warnings?.[0]?.message).toContain(`"Filter":{"Prefix":"${body.pathPrefix}/"}`);
    const id = created.body.dataExport?.id as string;

    // Act: a move within the bucket (tested again) and a rename (not tested)
    const moved = await ws.client.patch(`/data-exports/${id}`, { pathPrefix: `${body.pathPrefix}/moved` });
    const renamed = await ws.client.patch(`/data-exports/${id}`, { name: 'Renamed' });
    // Assess
    expect(moved.status).toBe(200);
    expect(moved.body.warnings).toEqual(couldNotCheck);
    expect(renamed.status).toBe(200);
    expect(renamed.body.warnings).toBeUndefined();

    // Act: the test endpoint
    const tested = await ws.client.post(`/data-exports/${id}/test`, {});
    // Assess
    expect(tested.status).toBe(200);
    expect(tested.body).toMatchObject({ success: true, warnings: couldNotCheck });
    await ws.client.delete(`/data-exports/${id}`);
  });
});

describe('server-side encryption over HTTP', () => {
  it('creates an export with aws:kms and its key, shows them, and changes them with a new test write', async () => {
    // Act
    const created = await ws.client.post(
      '/data-exports',
      harness.createBody({ serverSideEncryption: 'aws:kms', kmsKeyId: 'alias/sluice-exports' }),
    );
    // Assess
    expect(created.status).toBe(201);
    expect(created.body.dataExport).toMatchObject({
      serverSideEncryption: 'aws:kms',
      kmsKeyId: 'alias/sluice-exports',
    });
    const id = created.body.dataExport?.id as string;
    const changed = await ws.client.patch(`/data-exports/${id}`, { serverSideEncryption: 'AES256' });
    expect(changed.status).toBe(200);
    expect(changed.body.dataExport).toMatchObject({ serverSideEncryption: 'AES256', kmsKeyId: null });
    expect(changed.body.warnings).toBeDefined(); // tested again
    const cleared = await ws.client.patch(`/data-exports/${id}`, { serverSideEncryption: null });
    expect(cleared.body.dataExport).toMatchObject({ serverSideEncryption: null, kmsKeyId: null });
    await ws.client.delete(`/data-exports/${id}`);
  });

  it('refuses encryption settings for gcs and a kmsKeyId without aws:kms, with 400 invalid_input', async () => {
    const gcs = await ws.client.post(
      '/data-exports',
      harness.createBody({ provider: 'gcs', endpoint: null, serverSideEncryption: 'AES256' }),
    );
    expect(gcs.status).toBe(400);
    expect(gcs.body.code).toBe('invalid_input');
    expect(gcs.body.issues).toContainEqual(
      expect.objectContaining({
        path: 'serverSideEncryption',
        message: expect.stringContaining('not offered for gcs'),
      }),
    );
    const keyAlone = await ws.client.post('/data-exports', harness.createBody({ kmsKeyId: 'alias/x' }));
    expect(keyAlone.status).toBe(400);
    expect(keyAlone.body.issues).toEqual([
      { path: 'kmsKeyId', message: 'kmsKeyId needs serverSideEncryption aws:kms.' },
    ]);
    const unknown = await ws.client.post(
      '/data-exports',
      harness.createBody({ serverSideEncryption: 'aws:kms:dsse' }),
    );
    expect(unknown.status).toBe(422);
  });
});
