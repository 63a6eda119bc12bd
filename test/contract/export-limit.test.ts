import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiFunction, localApiFunctions } from '@sluice/local';
import {
  type ContractHarness,
  startContractHarness,
  type TestWorkspace,
} from '../helpers/contract-harness.js';

/** The API as Lambda runs it, with the setting `maxExportsPerWorkspace` = 3 in its environment. */
const MAX = 3;

let harness: ContractHarness;
let ws: TestWorkspace;

beforeAll(async () => {
  const { authorizer, api } = localApiFunctions({
    ...process.env,
    SLUICE_MAX_EXPORTS_PER_WORKSPACE: String(MAX),
  });
  harness = await startContractHarness({ handlers: { authorizer, api: api as unknown as ApiFunction } });
  ws = await harness.newWorkspace();
});

afterAll(async () => {
  expect(await harness.closeAndFindLeaks()).toEqual([]);
});

describe('maxExportsPerWorkspace (issue 28)', () => {
  it('answers creates beyond the limit, sent at once, with 409 limit_exceeded and saves none of them', async () => {
    // Act: twice the limit, concurrently
    const answers = await Promise.all(
      Array.from({ length: 2 * MAX }, () => ws.client.post('/data-exports', harness.createBody())),
    );
    const listed = await ws.client.get('/data-exports');

    // Assess
    const statuses = answers.map((answer) => answer.status).sort();
    expect(statuses).toEqual([...Array(MAX).fill(201), ...Array(MAX).fill(409)]);
    for (const refused of answers.filter((answer) => answer.status === 409)) {
      expect(refused.body).toMatchObject({
        success: false,
        code: 'limit_exceeded',
        error: expect.stringContaining(`${MAX} data exports`),
      });
    }
    expect((listed.body.dataExports as unknown[]).length).toBe(MAX);
  });

  it('makes room again when an export is deleted, and only then', async () => {
    // Prepare: the workspace is full (first test); a delete of an id that does not exist frees nothing
    const listed = await ws.client.get('/data-exports');
    const first = (listed.body.dataExports as { id: string }[])[0]!.id;
    const missing = await ws.client.delete('/data-exports/exp_000000000000000000000000');

    // Act
    const stillFull = await ws.client.post('/data-exports', harness.createBody());
    const deleted = await ws.client.delete(`/data-exports/${first}`);
    const afterDelete = await ws.client.post('/data-exports', harness.createBody());
    const fullAgain = await ws.client.post('/data-exports', harness.createBody());

    // Assess
    expect(missing.status).toBe(404);
    expect(stillFull.status).toBe(409);
    expect(deleted.status).toBe(200);
    expect(afterDelete.status).toBe(201);
    expect(fullAgain.status).toBe(409);
  });

  it('leaves another workspace its own count', async () => {
    // Prepare
    const other = await harness.newWorkspace();

    // Act
    const created = await other.client.post('/data-exports', harness.createBody());

    // Assess
    expect(created.status).toBe(201);
  });
});
