import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { putRunRecord } from '../helpers/seed-runs.js';
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

/** Creates an export and records `count` finished runs for it, one a minute, `run_0` the oldest. */
async function exportWithRuns(count: number): Promise<string> {
  const created = await ws.client.post('/data-exports', harness.createBody());
  const id = created.body.dataExport!.id as string;
  const base = Date.now() - count * 60_000;
  for (let i = 0; i < count; i++) {
    const startedAt = new Date(base + i * 60_000).toISOString();
    await putRunRecord(ws.workspaceId, id, { id: `run_${i}`, startedAt, rowCount: i });
  }
  return id;
}

describe('GET /data-exports/{id}/runs pages with nextToken', () => {
  it('reads every run once, newest first, page by page; a short page has no nextToken', async () => {
    // Prepare
    const id = await exportWithRuns(5);

    // Act
    const pages: string[][] = [];
    let token: string | undefined;
    do {
      const query = token === undefined ? '?limit=2' : `?limit=2&nextToken=${encodeURIComponent(token)}`;
      const page = await ws.client.get(`/data-exports/${id}/runs${query}`);
      expect(page.status).toBe(200);
      pages.push(page.body.runs!.map((run) => run.id as string));
      token = page.body.nextToken;
    } while (token !== undefined && pages.length < 10);

    // Assess
    expect(pages).toEqual([['run_4', 'run_3'], ['run_2', 'run_1'], ['run_0']]);
  });

  it('ends with an empty page when the last page was exactly full', async () => {
    // Prepare
    const id = await exportWithRuns(2);

    // Act
    const first = await ws.client.get(`/data-exports/${id}/runs?limit=2`);
    const second = await ws.client.get(
      `/data-exports/${id}/runs?limit=2&nextToken=${encodeURIComponent(first.body.nextToken!)}`,
    );

    // Assess
    expect(first.body.runs!.map((run) => run.id)).toEqual(['run_1', 'run_0']);
    expect(second.status).toBe(200);
    expect(second.body).toEqual({ success: true, runs: [] });
  });

  it.each([
    ['not base64 JSON', 'garbage!'],
    ['JSON of the wrong shape', Buffer.from('{"s":1,"i":"run_1"}').toString('base64url')],
    ['a run id with a #', Buffer.from('{"s":"2026-12-01T00:00:00.000Z","i":"a#b"}').toString('base64url')],
  ])('refuses a nextToken that is %s with 400 invalid_input on nextToken', async (_, token) => {
    // Prepare
    const id = await exportWithRuns(0);

    // Act
    const response = await ws.client.get(`/data-exports/${id}/runs?nextToken=${encodeURIComponent(token)}`);

    // Assess
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ code: 'invalid_input', issues: [{ path: 'nextToken' }] });
  });
});
