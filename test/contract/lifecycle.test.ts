import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiClient } from '../helpers/api-client.js';
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

describe('data exports lifecycle over HTTP', () => {
  it('creates an export, writes the connection test file, and lists, gets, runs and deletes it', async () => {
    // Prepare
    const body = harness.createBody({ startFrom: new Date(Date.now() - 3_600_000).toISOString() });

    // Act
    const created = await ws.client.post('/data-exports', body);

    // Assess
    expect(created.status).toBe(201);
    const view = created.body.dataExport!;
    expect(view.id).toMatch(/^exp_[0-9a-f]{24}$/);
    expect(view).toMatchObject({
      name: 'Analytics lake',
      provider: 's3',
      bucket: 'local-exports',
      region: 'auto',
      endpoint: harness.s3Endpoint,
      pathPrefix: body.pathPrefix,
      accessKeyId: 'S3…',
      datasets: ['email_events', 'custom_events', 'subscribers'],
      frequency: 'every_15_minutes',
      isEnabled: true,
      status: 'queued',
      exportedThrough: { email_events: null, custom_events: null, subscribers: null },
      consecutiveFailures: 0,
      totalRowsExported: 0,
    });
    expect(view.nextRunAt).toBe(view.createdAt);
    const testFile = await harness.readObject(
      'local-exports',
      `${body.pathPrefix}/_sluice/connection-test.json`,
    );
    expect(JSON.parse(testFile ?? '{}')).toMatchObject({ service: 'sluice' });

    const stored = await harness.store.getDestination(ws.workspaceId, view.id);
    expect(stored).toMatchObject({ configVersion: 1, manualRunQueued: true, status: 'queued' });
    expect(stored?.datasetStartedAt).toEqual({
      email_events: body.startFrom,
      custom_events: body.startFrom,
      subscribers: body.startFrom,
    });
    expect(stored?.secret?.ciphertext).not.toContain('S3RVER');

    const list = await ws.client.get('/data-exports');
    expect(list.status).toBe(200);
    expect(list.body.dataExports!.map((item) => item.id)).toEqual([view.id]);

    const got = await ws.client.get(`/data-exports/${view.id}`);
    expect(got.status).toBe(200);
    expect(got.body.dataExport).toEqual(view);

    // Already queued by create: a manual run starts nothing twice.
    const run = await ws.client.post(`/data-exports/${view.id}/run`);
    expect(run.status).toBe(200);
    expect(run.body).toMatchObject({
      success: true,
      queued: false,
      dataExport: { id: view.id, status: 'queued' },
    });

    const runs = await ws.client.get(`/data-exports/${view.id}/runs`);
    expect(runs.status).toBe(200);
    expect(runs.body).toEqual({ success: true, runs: [] });

    const tested = await ws.client.post(`/data-exports/${view.id}/test`);
    expect(tested.status).toBe(200);
    expect(tested.body.success).toBe(true);
    expect(Date.parse(tested.body.testedAt!)).not.toBeNaN();

    const deleted = await ws.client.delete(`/data-exports/${view.id}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ success: true, dataExportId: view.id });
    expect((await ws.client.get(`/data-exports/${view.id}`)).status).toBe(404);
    expect((await ws.client.delete(`/data-exports/${view.id}`)).status).toBe(404);
    expect((await ws.client.get('/data-exports')).body.dataExports).toEqual([]);
  });

  it('serves the same API under /v1', async () => {
    const legacy = new ApiClient(harness.url, ws.client.apiKey, '/v1');
    const list = await legacy.get('/data-exports');
    expect(list.status).toBe(200);
    expect(list.body.success).toBe(true);
  });
});
