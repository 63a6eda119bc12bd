import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { documentClient } from '@sluice/control';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ContractHarness,
  startContractHarness,
  type TestWorkspace,
} from '../helpers/contract-harness.js';
import { controlTable } from '../helpers/tables.js';

let harness: ContractHarness;
let ws: TestWorkspace;

beforeAll(async () => {
  harness = await startContractHarness();
  ws = await harness.newWorkspace();
});

afterAll(async () => {
  expect(await harness.closeAndFindLeaks()).toEqual([]);
});

describe('POST /data-exports/{id}/test (issue 28)', () => {
  it("still writes the test file with the export's server-side encryption settings sent along", async () => {
    // Prepare
    const body = harness.createBody({ serverSideEncryption: 'AES256' });
    const created = await ws.client.post('/data-exports', body);
    const id = created.body.dataExport!.id as string;

    // Act
    const tested = await ws.client.post(`/data-exports/${id}/test`);
    const written = await harness.readObject(
      body.bucket as string,
      `${body.pathPrefix as string}/_sluice/connection-test.json`,
    );

    // Assess
    expect(created.status).toBe(201);
    expect(tested.status).toBe(200);
    expect(tested.body).toMatchObject({ success: true });
    // s3rver keeps no encryption setting; the headers sent are checked in test-data-export.test.ts.
    expect(written).toBeDefined();
  });

  it('answers a stored secret that will not open with a clear, non-retryable 409 secret_rejected', async () => {
    // Prepare: the sealed secret damaged in the table (another key, a restore gone wrong)
    const created = await ws.client.post('/data-exports', harness.createBody());
    const id = created.body.dataExport!.id as string;
    await documentClient.send(
      new UpdateCommand({
        TableName: controlTable.tableName,
        Key: { PK: `WS#${ws.workspaceId}`, SK: `DEST#${id}` },
        UpdateExpression: 'SET #secret.#tag = :tag',
        ExpressionAttributeNames: { '#secret': 'secret', '#tag': 'tag' },
        ExpressionAttributeValues: { ':tag': Buffer.alloc(16, 7).toString('base64') },
      }),
    );

    // Act
    const tested = await ws.client.post(`/data-exports/${id}/test`);

    // Assess
    expect(tested.status).toBe(409);
    expect(tested.body).toMatchObject({
      success: false,
      code: 'secret_rejected',
      retryable: false,
      error: expect.stringMatching(/could not be decrypted\. Update the export with its credentials again/),
    });
  });
});
