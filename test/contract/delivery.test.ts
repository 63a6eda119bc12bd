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
