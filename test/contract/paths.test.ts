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
  expect(await harness.closeAndFindLeaks()).toEqual([]);
});

/** Sends `method path` exactly as written (node:http does not normalise dot segments; fetch would). */
function sendRaw(method: string, path: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const { port } = new URL(harness.url);
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, method, path, headers: { authorization: `Bearer ${ws.client.apiKey}` } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) }),
        );
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe('paths with an empty or dot segment', () => {
  it('answer 404 not_found and never act on the export the path would name without them', async () => {
    // Prepare
    const created = await ws.client.post('/data-exports', harness.createBody());
    expect(created.status).toBe(201);
    const id = created.body.dataExport!.id as string;
    const paths = [
      `/v1/data-exports/${id}/`,
      `/api/v1/data-exports/${id}/`,
      `/v1/data-exports/${id}/backfills/..`,
      `/v1/data-exports/${id}/backfills/../`,
      `/v1/data-exports/${id}/backfills/.`,
      `/v1/data-exports/${id}/backfills/%2e%2e`,
      `/v1/data-exports/${id}/backfills/%2E%2e/`,
      `/v1/data-exports/${id}/runs/`,
      `/v1/data-exports/${id}/./`,
      `/v1/data-exports//${id}`,
      `/v1/data-exports/${id}//`,
      `/v1/data-exports/`,
    ];
    for (const path of paths) {
      // Act
      const response = await sendRaw('DELETE', path);
      // Assess
      expect(response.status, path).toBe(404);
      expect(response.body, path).toMatchObject({ success: false, code: 'not_found' });
    }
    expect((await ws.client.get(`/data-exports/${id}`)).status).toBe(200);
  });

  it('answers the path a client builds from a backfill id ".." (normalised by fetch to …/<id>/) with 404', async () => {
    // Prepare
    const created = await ws.client.post('/data-exports', harness.createBody());
    const id = created.body.dataExport!.id as string;
    // Act: what `fetch` sends for `${base}/data-exports/${id}/backfills/${encodeURIComponent('..')}`
    const response = await ws.client.delete(`/data-exports/${id}/backfills/..`, { skipContract: true });
    // Assess
    expect(response.status).toBe(404);
    expect(response.body.code).toBe('not_found');
    expect((await ws.client.get(`/data-exports/${id}`)).status).toBe(200);
  });
});
