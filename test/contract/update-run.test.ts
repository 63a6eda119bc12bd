import { CreateBucketCommand } from '@aws-sdk/client-s3';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { createDocumentClient, cursorSk, destinationSk, runSk, runsPk, workspacePk } from '@sluice/control';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestMatchesSchema } from '../helpers/openapi.js';
import {
  type ContractHarness,
  startContractHarness,
  type TestWorkspace,
  uniqueId,
} from '../helpers/contract-harness.js';

let harness: ContractHarness;
let ws: TestWorkspace;
const db = createDocumentClient();
const table = process.env.SLUICE_CONTROL_TABLE!;
/** The local bucket's key pair, sent again where a change needs the credentials. */
const LOCAL_CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };

beforeAll(async () => {
  harness = await startContractHarness();
  ws = await harness.newWorkspace();
});

afterAll(async () => {
  db.destroy();
  expect(await harness.closeAndFindLeaks()).toEqual([]);
});

async function createExport(overrides: Record<string, unknown> = {}) {
  const body = harness.createBody(overrides);
  const response = await ws.client.post('/data-exports', body);
  expect(response.status).toBe(201);
  return { id: response.body.dataExport!.id, body };
}

async function stored(id: string) {
  const destination = await harness.store.getDestination(ws.workspaceId, id);
  if (!destination) throw new Error(`${id} is not stored`);
  return destination;
}

async function rawItem(id: string) {
  const result = await db.send(
    new GetCommand({ TableName: table, Key: { PK: workspacePk(ws.workspaceId), SK: destinationSk(id) } }),
  );
  return result.Item!;
}

async function rawCursor(id: string, dataset: string) {
  const result = await db.send(
    new GetCommand({
      TableName: table,
      Key: { PK: workspacePk(ws.workspaceId), SK: cursorSk(id, dataset as 'email_events') },
      ConsistentRead: true,
    }),
  );
  return result.Item;
}

describe('PATCH /data-exports/{id}', () => {
  it.each([
    { name: 'accessKeyId alone', body: { accessKeyId: 'S3RVER' }, status: 400, path: 'secretAccessKey' },
    { name: 'secretAccessKey alone', body: { secretAccessKey: 'S3RVER' }, status: 400, path: 'accessKeyId' },
    { name: 'an empty body object', body: {}, status: 400, path: '' },
    { name: 'a blank name', body: { name: ' ' }, status: 400, path: 'name' },
    { name: 'provider (cannot change)', body: { provider: 'gcs' }, status: 400, path: 'provider' },
    { name: 'an unknown dataset', body: { datasets: ['clicks'] }, status: 422, path: 'datasets[0]' },
    { name: 'no dataset', body: { datasets: [] }, status: 422, path: 'datasets' },
    { name: 'isEnabled as a string', body: { isEnabled: 'yes' }, status: 422, path: 'isEnabled' },
    { name: 'an unknown frequency', body: { frequency: 'monthly' }, status: 422, path: 'frequency' },
    { name: 'a bucket URL', body: { bucket: 's3://local-exports' }, status: 400, path: 'bucket' },
    { name: 'a .. prefix', body: { pathPrefix: '../up' }, status: 400, path: 'pathPrefix' },
    {
      name: 'a plain-http endpoint',
      body: { endpoint: 'http://s3.example.com' },
      status: 400,
      path: 'endpoint',
    },
    // Clearing the endpoint makes it Amazon S3, which needs a region.
    { name: 'clearing the endpoint without a region', body: { endpoint: null }, status: 400, path: 'region' },
    { name: 'an empty endpoint without a region', body: { endpoint: '' }, status: 400, path: 'region' },
  ])('refuses $name with $status at "$path" and changes nothing', async ({ body, status, path }) => {
    // Prepare
    const { id } = await createExport();
    const before = await stored(id);

    // Act
    const response = await ws.client.patch(`/data-exports/${id}`, body);

    // Assess
    expect(response.status).toBe(status);
    expect(response.body.code).toBe(status === 422 ? 'unprocessable_entity' : 'invalid_input');
    expect(response.body.issues?.map((issue) => issue.path)).toContain(path);
    expect(requestMatchesSchema('updateDataExport', body)).toBe(status === 400);
    expect(await stored(id)).toEqual(before);
  });

  it('renames without a connection test or a config version bump', async () => {
    const { id } = await createExport();
    const response = await ws.client.patch(`/data-exports/${id}`, {
      name: '  Renamed  ',
      frequency: 'hourly',
    });
    expect(response.status).toBe(200);
    expect(response.body.dataExport).toMatchObject({ name: 'Renamed', frequency: 'hourly' });
    expect((await stored(id)).configVersion).toBe(1);
  });

  it('rotates credentials: tests them, re-seals the secret, bumps configVersion', async () => {
    // Prepare
    const { id, body } = await createExport();
    const before = await stored(id);
    const testKey = `${body.pathPrefix as string}/_sluice/connection-test.json`;
    const firstTest = await harness.readObject('local-exports', testKey);

    // Act
    const response = await ws.client.patch(`/data-exports/${id}`, {
      accessKeyId: 'S3RVER',
      secretAccessKey: 'S3RVER',
    });

    // Assess
    expect(response.status).toBe(200);
    const after = await stored(id);
    expect(after.configVersion).toBe(2);
    expect(after.secret?.ciphertext).not.toBe(before.secret?.ciphertext);
    expect(await harness.readObject('local-exports', testKey)).not.toBe(firstTest);
  });

  it('refuses credentials that fail the test and keeps the old ones', async () => {
    // Prepare
    const { id } = await createExport();
    const before = await stored(id);
    // s3rver does not verify SigV4 signatures, but it does know its access key ids.
    const newSecret = uniqueId('rotatedSecret');
    harness.secrets.add(newSecret);

    // Act
    const response = await ws.client.patch(`/data-exports/${id}`, {
      accessKeyId: 'AKIAUNKNOWNKEY000000',
      secretAccessKey: newSecret,
    });

    // Assess
    expect(response.status).toBe(400);
    expect(response.body.code).toBe('connection_failed');
    expect(response.body.error).toMatch(/key/i);
    expect(await stored(id)).toEqual(before);
  });

  it('moves to a new prefix after a test write there, with the stored secret', async () => {
    const { id } = await createExport();
    const prefix = uniqueId('moved/');
    const response = await ws.client.patch(`/data-exports/${id}`, { pathPrefix: `/${prefix}/` });
    expect(response.status).toBe(200);
    expect(response.body.dataExport!.pathPrefix).toBe(prefix);
    expect(await harness.readObject('local-exports', `${prefix}/_sluice/connection-test.json`)).toBeDefined();
    expect((await stored(id)).configVersion).toBe(2);
  });

  it('refuses a move to a missing bucket and changes nothing', async () => {
    const { id } = await createExport();
    const before = await stored(id);
    const response = await ws.client.patch(`/data-exports/${id}`, {
      bucket: 'no-such-bucket-here',
      ...LOCAL_CREDENTIALS,
    });
    expect(response.status).toBe(400);
    expect(response.body.code).toBe('connection_failed');
    expect(response.body.error).toMatch(/no-such-bucket-here/);
    expect(await stored(id)).toEqual(before);
  });

  it.each([
    { field: 'bucket', body: { bucket: 'moved-bucket' } },
    { field: 'endpoint', body: { endpoint: 'https://s3.example.com' } },
    { field: 'region', body: { region: 'eu-west-1' } },
  ])(
    'refuses a new $field without the credentials, before any request is signed',
    async ({ field, body }) => {
      // Prepare: a caller with a write key who never saw the secret.
      const { id } = await createExport();
      const before = await stored(id);

      // Act
      const response = await ws.client.patch(`/data-exports/${id}`, body);

      // Assess
      expect(response.status).toBe(400);
      expect(response.body.code).toBe('invalid_input');
      expect(response.body.issues).toEqual([expect.objectContaining({ path: field })]);
      expect(response.body.error).toContain(field);
      expect(response.body.error).toMatch(/accessKeyId and secretAccessKey/);
      expect(requestMatchesSchema('updateDataExport', body)).toBe(true);
      expect(await stored(id)).toEqual(before);
    },
  );

  it('names every location field that changed without the credentials', async () => {
    const { id } = await createExport();
    const response = await ws.client.patch(`/data-exports/${id}`, { bucket: 'moved-bucket', region: 'weur' });
    expect(response.status).toBe(400);
    expect(response.body.issues?.map((issue) => issue.path)).toEqual(['bucket', 'region']);
  });

  it('writes nothing to a new bucket named without the credentials, and moves there with them', async () => {
    // Prepare
    const { id, body } = await createExport();
    const bucket = uniqueId('moved-');
    await harness.s3.send(new CreateBucketCommand({ Bucket: bucket }));
    const testKey = `${body.pathPrefix as string}/_sluice/connection-test.json`;

    // Act
    const refused = await ws.client.patch(`/data-exports/${id}`, { bucket });
    const written = await harness.readObject(bucket, testKey);
    const moved = await ws.client.patch(`/data-exports/${id}`, { bucket, ...LOCAL_CREDENTIALS });

    // Assess
    expect(refused.status).toBe(400);
    expect(written).toBeUndefined();
    expect(moved.status, JSON.stringify(moved.body)).toBe(200);
    expect(moved.body.dataExport!.bucket).toBe(bucket);
    expect(await harness.readObject(bucket, testKey)).toBeDefined();
    expect((await stored(id)).configVersion).toBe(2);
  });

  it('accepts the stored bucket, endpoint and region sent again without the credentials', async () => {
    const { id, body } = await createExport();
    const response = await ws.client.patch(`/data-exports/${id}`, {
      bucket: body.bucket,
      endpoint: `${body.endpoint as string}/`,
      region: 'auto',
      name: 'Same place',
    });
    expect(response.status).toBe(200);
    expect((await stored(id)).configVersion).toBe(1);
  });

  it.each(['__proto__', 'constructor', 'prototype'])(
    'refuses "%s" in a PATCH body like any unknown field, and changes nothing',
    async (field) => {
      const { id } = await createExport();
      const before = await stored(id);
      const response = await ws.client.patch(`/data-exports/${id}`, undefined, {
        rawBody: `{"name":"Renamed","${field}":{"isEnabled":false}}`,
        headers: { 'content-type': 'application/json' },
      });
      expect(response.status).toBe(400);
      expect(response.body.issues).toEqual([expect.objectContaining({ path: field })]);
      expect(await stored(id)).toEqual(before);
    },
  );

  it('starts added datasets at the time of the change', async () => {
    // Prepare
    const startFrom = new Date(Date.now() - 2 * 86_400_000).toISOString();
    const { id } = await createExport({ datasets: ['email_events'], startFrom });
    const changedAfter = Date.now();

    // Act
    const response = await ws.client.patch(`/data-exports/${id}`, {
      datasets: ['email_events', 'sms_events'],
    });

    // Assess
    expect(response.status).toBe(200);
    expect(response.body.dataExport!.exportedThrough).toEqual({ email_events: null, sms_events: null });
    const after = await stored(id);
    expect(after.datasetStartedAt.email_events).toBe(startFrom);
    expect(Date.parse(after.datasetStartedAt.sms_events!)).toBeGreaterThanOrEqual(changedAfter - 1000);
    expect(after.configVersion).toBe(1);
  });

  it('forgets a removed dataset’s progress: added back, it starts at the time it is added', async () => {
    // Prepare: sms_events exported through an hour ago, then removed while far behind now.
    const startFrom = new Date(Date.now() - 2 * 86_400_000).toISOString();
    const { id } = await createExport({ datasets: ['email_events', 'sms_events'], startFrom });
    const exportedThroughMs = Date.now() - 3_600_000;
    for (const dataset of ['email_events', 'sms_events'] as const) {
      await db.send(
        new PutCommand({
          TableName: table,
          Item: {
            PK: workspacePk(ws.workspaceId),
            SK: cursorSk(id, dataset),
            dataset,
            exportedThroughMs,
            planned: [{ fromMs: exportedThroughMs, toMs: exportedThroughMs + 60_000, runId: 'run_old' }],
          },
        }),
      );
    }

    // Act: remove sms_events
    const removed = await ws.client.patch(`/data-exports/${id}`, { datasets: ['email_events'] });

    // Assess: its cursor is gone in the same write, the other dataset keeps its position
    expect(removed.status).toBe(200);
    expect(removed.body.dataExport!.exportedThrough).toEqual({
      email_events: new Date(exportedThroughMs).toISOString(),
    });
    expect(await rawCursor(id, 'sms_events')).toBeUndefined();
    expect((await rawCursor(id, 'email_events'))?.planned).toHaveLength(1);

    // Act: add it back
    const addedAt = Date.now();
    const added = await ws.client.patch(`/data-exports/${id}`, { datasets: ['email_events', 'sms_events'] });

    // Assess: no position, started at the change, not at the old cursor or startFrom
    expect(added.status).toBe(200);
    expect(added.body.dataExport!.exportedThrough).toEqual({
      email_events: new Date(exportedThroughMs).toISOString(),
      sms_events: null,
    });
    const after = await stored(id);
    expect(Date.parse(after.datasetStartedAt.sms_events!)).toBeGreaterThanOrEqual(addedAt - 1000);
    expect(after.datasetStartedAt.email_events).toBe(startFrom);
    expect(await rawCursor(id, 'sms_events')).toBeUndefined();
  });

  it('clears a cursor left behind by a run that committed after the dataset was removed', async () => {
    // Prepare: removed, then a run in flight since before the removal wrote its cursor again.
    const { id } = await createExport({ datasets: ['email_events', 'custom_events'] });
    await ws.client.patch(`/data-exports/${id}`, { datasets: ['email_events'] });
    await db.send(
      new PutCommand({
        TableName: table,
        Item: {
          PK: workspacePk(ws.workspaceId),
          SK: cursorSk(id, 'custom_events'),
          dataset: 'custom_events',
          exportedThroughMs: Date.now() - 60_000,
        },
      }),
    );

    // Act
    const added = await ws.client.patch(`/data-exports/${id}`, {
      datasets: ['email_events', 'custom_events'],
    });

    // Assess
    expect(added.status).toBe(200);
    expect(added.body.dataExport!.exportedThrough).toMatchObject({ custom_events: null });
    expect(await rawCursor(id, 'custom_events')).toBeUndefined();
  });

  it.each([
    { change: 'credentials', body: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } },
    { change: 'location', body: { pathPrefix: 'moved-after-failures' } },
  ])('ends the failure backoff and makes a run due now when the $change change', async ({ body }) => {
    // Prepare: failing for a while, next try six hours away.
    const { id } = await createExport();
    const backoffUntil = new Date(Date.now() + 6 * 3_600_000).toISOString();
    await harness.store.updateDestination(ws.workspaceId, id, {
      status: 'failed',
      manualRunQueued: false,
      consecutiveFailures: 6,
      lastError: 'Access denied',
      lastErrorAt: new Date().toISOString(),
      nextRunAt: backoffUntil,
    });
    const changedAfter = Date.now();

    // Act
    const response = await ws.client.patch(`/data-exports/${id}`, body);

    // Assess
    expect(response.status).toBe(200);
    expect(response.body.dataExport).toMatchObject({ status: 'idle', consecutiveFailures: 0 });
    const after = await stored(id);
    expect(after.configVersion).toBe(2);
    const nextRunMs = Date.parse(after.nextRunAt!);
    expect(nextRunMs).toBeGreaterThanOrEqual(changedAfter - 1000);
    expect(nextRunMs).toBeLessThanOrEqual(Date.now());
    expect((await rawItem(id)).dueAt).toBe(`${after.nextRunAt}#${ws.workspaceId}#${id}`);
  });

  it('ends the backoff of a paused export too: resumed, it is due at once', async () => {
    // Prepare
    const { id } = await createExport();
    await harness.store.updateDestination(ws.workspaceId, id, {
      isEnabled: false,
      status: 'failed',
      consecutiveFailures: 3,
      nextRunAt: new Date(Date.now() + 3_600_000).toISOString(),
    });

    // Act
    const rotated = await ws.client.patch(`/data-exports/${id}`, {
      accessKeyId: 'S3RVER',
      secretAccessKey: 'S3RVER',
    });
    const resumed = await ws.client.patch(`/data-exports/${id}`, { isEnabled: true });

    // Assess
    expect(rotated.status).toBe(200);
    expect(rotated.body.dataExport).toMatchObject({
      isEnabled: false,
      status: 'idle',
      consecutiveFailures: 0,
    });
    expect(resumed.status).toBe(200);
    const item = await rawItem(id);
    expect(Date.parse(String(item.nextRunAt))).toBeLessThanOrEqual(Date.now());
    expect(item.dueAt).toBe(`${item.nextRunAt}#${ws.workspaceId}#${id}`);
  });

  it('keeps the backoff when nothing about the location or credentials changes', async () => {
    const { id } = await createExport();
    const backoffUntil = new Date(Date.now() + 3_600_000).toISOString();
    await harness.store.updateDestination(ws.workspaceId, id, {
      status: 'failed',
      consecutiveFailures: 2,
      nextRunAt: backoffUntil,
    });

    const response = await ws.client.patch(`/data-exports/${id}`, { name: 'Renamed while failing' });

    expect(response.status).toBe(200);
    expect(response.body.dataExport).toMatchObject({
      status: 'failed',
      consecutiveFailures: 2,
      nextRunAt: backoffUntil,
    });
  });

  it('pauses (off the due index, run refused with 409) and resumes', async () => {
    // Prepare
    const { id } = await createExport();
    expect((await rawItem(id)).dueKey).toBeDefined();

    // Act: pause
    const paused = await ws.client.patch(`/data-exports/${id}`, { isEnabled: false });

    // Assess
    expect(paused.status).toBe(200);
    expect(paused.body.dataExport!.isEnabled).toBe(false);
    expect((await rawItem(id)).dueKey).toBeUndefined();
    const run = await ws.client.post(`/data-exports/${id}/run`);
    expect(run.status).toBe(409);
    expect(run.body.code).toBe('destination_disabled');

    // Act: resume
    const resumed = await ws.client.patch(`/data-exports/${id}`, { isEnabled: true });
    expect(resumed.status).toBe(200);
    expect(resumed.body.dataExport!.isEnabled).toBe(true);
    expect((await rawItem(id)).dueKey).toBeDefined();
  });

  it('resumes an export paused with its next run ahead: due at once, not at its next slot', async () => {
    // Prepare: a daily export paused after a run that scheduled the next one for tomorrow
    const { id } = await createExport({ frequency: 'daily' });
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString();
    await harness.store.updateDestination(ws.workspaceId, id, { status: 'idle', nextRunAt: tomorrow });
    expect((await ws.client.patch(`/data-exports/${id}`, { isEnabled: false })).status).toBe(200);
    const before = Date.now();

    // Act
    const resumed = await ws.client.patch(`/data-exports/${id}`, { isEnabled: true });

    // Assess
    expect(resumed.status).toBe(200);
    const item = await rawItem(id);
    expect(Date.parse(String(item.nextRunAt))).toBeGreaterThanOrEqual(before - 1_000);
    expect(Date.parse(String(item.nextRunAt))).toBeLessThanOrEqual(Date.now());
    expect(item.dueKey).toBeDefined();
  });
});

describe('POST /data-exports/{id}/run', () => {
  it('queues once: a second run while queued starts nothing', async () => {
    // Prepare: the engine has finished the first run.
    const { id } = await createExport();
    await harness.store.updateDestination(ws.workspaceId, id, { status: 'idle', manualRunQueued: false });

    // Act
    const first = await ws.client.post(`/data-exports/${id}/run`);
    const second = await ws.client.post(`/data-exports/${id}/run`);

    // Assess
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ success: true, queued: true, dataExport: { status: 'queued' } });
    expect(second.status).toBe(200);
    expect(second.body).toMatchObject({ success: true, queued: false });
  });
});

describe('GET /data-exports/{id}/runs', () => {
  it('lists runs newest first and honours limit', async () => {
    // Prepare: three runs as the engine records them.
    const { id } = await createExport();
    const base = Date.now() - 3_600_000;
    for (let i = 0; i < 3; i++) {
      const startedAt = new Date(base + i * 60_000).toISOString();
      const runId = `run_${i}`;
      await db.send(
        new PutCommand({
          TableName: table,
          Item: {
            PK: runsPk(ws.workspaceId, id),
            SK: runSk(startedAt, runId),
            id: runId,
            destinationId: id,
            workspaceId: ws.workspaceId,
            status: 'succeeded',
            isManual: i === 0,
            rowCount: 10 * i,
            fileCount: i,
            byteCount: 100 * i,
            stats: { email_events: { rows: 10 * i, files: i, bytes: 100 * i } },
            error: null,
            startedAt,
            finishedAt: new Date(base + i * 60_000 + 5_000).toISOString(),
            expiresAt: Math.floor(base / 1000) + 14 * 86_400,
          },
        }),
      );
    }

    // Act
    const all = await ws.client.get(`/data-exports/${id}/runs`);
    const two = await ws.client.get(`/data-exports/${id}/runs?limit=2`);

    // Assess
    expect(all.body.runs!.map((run) => run.id)).toEqual(['run_2', 'run_1', 'run_0']);
    expect(two.body.runs!.map((run) => run.id)).toEqual(['run_2', 'run_1']);
  });

  it.each(['0', '101', '-1', '2.5', 'abc', '1e2'])('refuses limit=%s with 400 at limit', async (limit) => {
    const { id } = await createExport();
    const response = await ws.client.get(`/data-exports/${id}/runs?limit=${limit}`);
    expect(response.status).toBe(400);
    expect(response.body.code).toBe('invalid_input');
    expect(response.body.issues![0]!.path).toBe('limit');
  });

  it.each(['1', '100'])('accepts limit=%s', async (limit) => {
    const { id } = await createExport();
    expect((await ws.client.get(`/data-exports/${id}/runs?limit=${limit}`)).status).toBe(200);
  });
});
