import { randomUUID } from 'node:crypto';
import { DeleteCommand, GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { ConflictError, type Destination, newDestination } from '@sluice/core';
import { describe, expect, it } from 'vitest';
import { documentClient } from './client.js';
import { ControlStore } from './destinations.js';
import { DUE_INDEX_NAME, dueKey } from './due-index.js';
import {
  cursorSk,
  destinationSk,
  EXPORT_COUNT_SK,
  leaseSk,
  runExpiresAt,
  runSk,
  runsPk,
  workspacePk,
} from './items.js';
import { controlTable } from '../../../test/helpers/tables.js';

const tableName = process.env.SLUICE_CONTROL_TABLE as string;
const store = new ControlStore(controlTable);

function newWorkspace(): string {
  return `ws_${randomUUID()}`;
}

function sampleDestination(workspaceId: string, overrides: Partial<Destination> = {}): Destination {
  return {
    ...newDestination({
      workspaceId,
      id: `exp_${randomUUID().replaceAll('-', '')}`,
      name: 'Analytics lake',
      provider: 's3',
      bucket: 'acme-exports',
      region: 'us-east-1',
      endpoint: null,
      pathPrefix: 'sluice',
      accessKeyId: 'AKIAABCDEFGHWXYZ',
      secret: { encryptedDataKey: 'a2V5', iv: 'aXY=', ciphertext: 'Y3Q=', tag: 'dGFn' },
      datasets: ['email_events', 'custom_events', 'subscribers'],
      frequency: 'every_15_minutes',
      startFrom: '2026-09-30T12:00:00.000Z',
      now: new Date('2026-09-30T12:00:00.000Z'),
    }),
    status: 'idle',
    manualRunQueued: false,
    ...overrides,
  };
}

async function rawItem(workspaceId: string, id: string): Promise<Record<string, unknown> | undefined> {
  const result = await documentClient.send(
    new GetCommand({ TableName: tableName, Key: { PK: workspacePk(workspaceId), SK: destinationSk(id) } }),
  );
  return result.Item;
}

/** The due index entries of one destination (DynamoDB Local keeps its GSIs in step with the table). */
async function dueEntries(workspaceId: string, id: string): Promise<Record<string, unknown>[]> {
  const entries: Record<string, unknown>[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await documentClient.send(
      new QueryCommand({
        TableName: tableName,
        IndexName: DUE_INDEX_NAME,
        KeyConditionExpression: 'dueKey = :k',
        FilterExpression: 'workspaceId = :ws AND id = :id',
        ExpressionAttributeValues: { ':k': dueKey(id), ':ws': workspaceId, ':id': id },
        ExclusiveStartKey: startKey,
      }),
    );
    entries.push(...(page.Items ?? []));
    startKey = page.LastEvaluatedKey;
  } while (startKey !== undefined);
  return entries;
}

describe('ControlStore destinations', () => {
  it('creates a destination and reads it back without internal attributes, every dataset in exportedThrough', async () => {
    const workspaceId = newWorkspace();
    const destination = sampleDestination(workspaceId);

    const created = await store.createDestination(destination);
    const read = await store.getDestination(workspaceId, destination.id);

    expect(read).toEqual({
      ...destination,
      exportedThrough: { email_events: null, custom_events: null, subscribers: null },
    });
    expect(created).toEqual(read);
    expect(Object.keys(read ?? {})).not.toContain('PK');
    expect(Object.keys(read ?? {})).not.toContain('dueKey');
    const item = await rawItem(workspaceId, destination.id);
    expect(item?.exportedThrough).toBeUndefined();
    expect(item?.dueKey).toBe(dueKey(destination.id));
    expect(item?.dueAt).toBe(`${destination.nextRunAt}#${workspaceId}#${destination.id}`);
  });

  it('refuses a second create with the same id', async () => {
    const destination = sampleDestination(newWorkspace());
    await store.createDestination(destination);

    await expect(store.createDestination({ ...destination, name: 'other' })).rejects.toBeInstanceOf(
      ConflictError,
    );
    expect((await store.getDestination(destination.workspaceId, destination.id))?.name).toBe(
      'Analytics lake',
    );
  });

  it('assembles exportedThrough from the cursor items', async () => {
    const workspaceId = newWorkspace();
    const destination = sampleDestination(workspaceId);
    await store.createDestination(destination);
    const pk = workspacePk(workspaceId);
    await documentClient.send(
      new PutCommand({
        TableName: tableName,
        Item: {
          PK: pk,
          SK: cursorSk(destination.id, 'email_events'),
          dataset: 'email_events',
          exportedThroughMs: Date.parse('2026-10-01T00:00:00.000Z'),
        },
      }),
    );
    await documentClient.send(
      new PutCommand({
        TableName: tableName,
        Item: {
          PK: pk,
          SK: cursorSk(destination.id, 'subscribers'),
          dataset: 'subscribers',
          snapshotDate: '2026-09-30',
        },
      }),
    );
    // Planned but never committed: still null.
    await documentClient.send(
      new PutCommand({
        TableName: tableName,
        Item: {
          PK: pk,
          SK: cursorSk(destination.id, 'custom_events'),
          dataset: 'custom_events',
          planned: [{ fromMs: 1, toMs: 2 }],
        },
      }),
    );
    await documentClient.send(
      new PutCommand({
        TableName: tableName,
        Item: { PK: pk, SK: leaseSk(destination.id), runId: 'run_1', token: 't', expiresAtMs: 1 },
      }),
    );

    const read = await store.getDestination(workspaceId, destination.id);
    const [listed] = await store.listDestinations(workspaceId);

    expect(read?.exportedThrough).toEqual({
      email_events: '2026-10-01T00:00:00.000Z',
      custom_events: null,
      subscribers: '2026-09-30',
    });
    expect(listed).toEqual(read);
  });

  it('lists a workspace’s destinations oldest first, paginating past 1 MB pages', async () => {
    const workspaceId = newWorkspace();
    const big = 'x'.repeat(300_000);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const destination = sampleDestination(workspaceId, {
        name: big,
        isEnabled: false,
        createdAt: `2026-09-30T12:0${4 - i}:00.000Z`,
      });
      ids.unshift(destination.id);
      await store.createDestination(destination);
    }

    const listed = await store.listDestinations(workspaceId);

    expect(listed.map((d) => d.id)).toEqual(ids);
  });

  it('keeps workspaces apart: B cannot read, list, update, queue or delete A’s destination', async () => {
    const a = newWorkspace();
    const b = newWorkspace();
    const destination = sampleDestination(a);
    await store.createDestination(destination);

    expect(await store.getDestination(b, destination.id)).toBeUndefined();
    expect(await store.listDestinations(b)).toEqual([]);
    expect(await store.updateDestination(b, destination.id, { name: 'stolen' })).toBeUndefined();
    expect(await store.queueRun(b, destination.id, new Date())).toBeUndefined();
    expect(await store.deleteDestination(b, destination.id)).toBe(false);
    expect((await store.getDestination(a, destination.id))?.name).toBe('Analytics lake');
    expect(await store.listDestinations(a)).toHaveLength(1);
  });

  it('treats ids with a key separator as unknown', async () => {
    const workspaceId = newWorkspace();
    const destination = sampleDestination(workspaceId);
    await store.createDestination(destination);
    await documentClient.send(
      new PutCommand({
        TableName: tableName,
        Item: { PK: workspacePk(workspaceId), SK: leaseSk(destination.id), runId: 'r' },
      }),
    );

    expect(await store.getDestination(workspaceId, `${destination.id}#LEASE`)).toBeUndefined();
  });

  it('updates fields, bumps configVersion on request, sets updatedAt, and returns the new state', async () => {
    const workspaceId = newWorkspace();
    const destination = sampleDestination(workspaceId);
    await store.createDestination(destination);

    const updated = await store.updateDestination(
      workspaceId,
      destination.id,
      { name: 'Renamed', bucket: 'other-bucket' },
      { bumpConfigVersion: true, now: new Date('2026-10-01T00:00:00.000Z') },
    );
    const unbumped = await store.updateDestination(workspaceId, destination.id, { frequency: 'hourly' });

    expect(updated).toMatchObject({
      name: 'Renamed',
      bucket: 'other-bucket',
      configVersion: 2,
      updatedAt: '2026-10-01T00:00:00.000Z',
      createdAt: destination.createdAt,
    });
    expect(unbumped).toMatchObject({ frequency: 'hourly', configVersion: 2, name: 'Renamed' });
    expect(await store.getDestination(workspaceId, destination.id)).toEqual(unbumped);
  });

  it('returns undefined when updating a destination that does not exist, and creates nothing', async () => {
    const workspaceId = newWorkspace();

    expect(await store.updateDestination(workspaceId, 'exp_missing', { name: 'x' })).toBeUndefined();
    expect(await store.updateDestination(workspaceId, 'exp_missing', { isEnabled: true })).toBeUndefined();
    expect(await store.listDestinations(workspaceId)).toEqual([]);
  });

  it('keeps the due index sparse: a disabled destination is absent from it, re-enabling puts it back', async () => {
    const workspaceId = newWorkspace();
    const destination = sampleDestination(workspaceId);
    const neverEnabled = sampleDestination(workspaceId, { isEnabled: false });
    await store.createDestination(destination);
    await store.createDestination(neverEnabled);
    expect(await dueEntries(workspaceId, destination.id)).toHaveLength(1);
    expect(await dueEntries(workspaceId, neverEnabled.id)).toHaveLength(0);

    await store.updateDestination(workspaceId, destination.id, { isEnabled: false });
    const whilePaused = await dueEntries(workspaceId, destination.id);
    const item = await rawItem(workspaceId, destination.id);
    await store.updateDestination(workspaceId, destination.id, { isEnabled: true });
    const resumed = await dueEntries(workspaceId, destination.id);
    await store.updateDestination(workspaceId, destination.id, { nextRunAt: '2026-10-02T00:00:00.000Z' });
    const moved = await dueEntries(workspaceId, destination.id);
    await store.updateDestination(workspaceId, destination.id, { nextRunAt: null });
    const unscheduled = await dueEntries(workspaceId, destination.id);

    expect(whilePaused).toHaveLength(0);
    expect(item).not.toHaveProperty('dueKey');
    expect(item).not.toHaveProperty('dueAt');
    expect(resumed.map((e) => e.dueAt)).toEqual([
      `${destination.nextRunAt}#${workspaceId}#${destination.id}`,
    ]);
    expect(moved.map((e) => e.dueAt)).toEqual([`2026-10-02T00:00:00.000Z#${workspaceId}#${destination.id}`]);
    expect(unscheduled).toHaveLength(0);
  });

  it('never gives a paused destination due keys when its nextRunAt changes', async () => {
    const workspaceId = newWorkspace();
    const destination = sampleDestination(workspaceId, { isEnabled: false });
    await store.createDestination(destination);

    await store.updateDestination(workspaceId, destination.id, { nextRunAt: '2026-10-02T00:00:00.000Z' });

    expect(await dueEntries(workspaceId, destination.id)).toHaveLength(0);
  });

  it('stays consistent when a pause and a reschedule race', async () => {
    const workspaceId = newWorkspace();
    const destination = sampleDestination(workspaceId);
    await store.createDestination(destination);

    await Promise.all([
      store.updateDestination(workspaceId, destination.id, { isEnabled: false }),
      store.updateDestination(workspaceId, destination.id, { nextRunAt: '2026-10-03T00:00:00.000Z' }),
    ]);

    const item = await rawItem(workspaceId, destination.id);
    expect(item?.isEnabled).toBe(false);
    expect(item?.nextRunAt).toBe('2026-10-03T00:00:00.000Z');
    expect(item).not.toHaveProperty('dueKey');
    expect(item).not.toHaveProperty('dueAt');
  });

  it('deletes the cursors of removed datasets in the same write as the update', async () => {
    // Prepare
    const workspaceId = newWorkspace();
    const destination = sampleDestination(workspaceId);
    await store.createDestination(destination);
    const pk = workspacePk(workspaceId);
    for (const dataset of ['email_events', 'custom_events', 'subscribers'] as const) {
      await documentClient.send(
        new PutCommand({
          TableName: tableName,
          Item: { PK: pk, SK: cursorSk(destination.id, dataset), dataset, exportedThroughMs: 1 },
        }),
      );
    }
    await documentClient.send(
      new PutCommand({ TableName: tableName, Item: { PK: pk, SK: leaseSk(destination.id), runId: 'r' } }),
    );

    // Act
    const updated = await store.updateDestination(
      workspaceId,
      destination.id,
      { datasets: ['email_events'], isEnabled: false },
      { clearCursorsOf: ['custom_events', 'subscribers'], now: new Date('2026-10-01T00:00:00.000Z') },
    );

    // Assess
    expect(updated).toMatchObject({
      datasets: ['email_events'],
      isEnabled: false,
      updatedAt: '2026-10-01T00:00:00.000Z',
      exportedThrough: { email_events: new Date(1).toISOString() },
    });
    const left = await documentClient.send(
      new QueryCommand({
        TableName: tableName,
        KeyConditionExpression: 'PK = :pk',
        ExpressionAttributeValues: { ':pk': pk },
        ConsistentRead: true,
      }),
    );
    expect(left.Items?.map((item) => item.SK).sort()).toEqual(
      [
        destinationSk(destination.id),
        cursorSk(destination.id, 'email_events'),
        leaseSk(destination.id),
        EXPORT_COUNT_SK,
      ].sort(),
    );
    expect(await rawItem(workspaceId, destination.id)).not.toHaveProperty('dueKey');
  });

  it('deletes no cursor when the destination is gone: the transaction writes all or nothing', async () => {
    const workspaceId = newWorkspace();
    const cursor = {
      PK: workspacePk(workspaceId),
      SK: cursorSk('exp_gone', 'email_events'),
      exportedThroughMs: 1,
    };
    await documentClient.send(new PutCommand({ TableName: tableName, Item: cursor }));

    const updated = await store.updateDestination(
      workspaceId,
      'exp_gone',
      { datasets: ['custom_events'] },
      { clearCursorsOf: ['email_events'] },
    );

    expect(updated).toBeUndefined();
    const kept = await documentClient.send(
      new GetCommand({ TableName: tableName, Key: { PK: cursor.PK, SK: cursor.SK }, ConsistentRead: true }),
    );
    expect(kept.Item).toEqual(cursor);
    expect(await rawItem(workspaceId, 'exp_gone')).toBeUndefined();
  });

  it('deletes the destination with its cursors, lease and run history', async () => {
    const workspaceId = newWorkspace();
    const destination = sampleDestination(workspaceId);
    const neighbour = sampleDestination(workspaceId, { id: `${destination.id}x` });
    await store.createDestination(destination);
    await store.createDestination(neighbour);
    const pk = workspacePk(workspaceId);
    await documentClient.send(
      new PutCommand({
        TableName: tableName,
        Item: { PK: pk, SK: cursorSk(destination.id, 'email_events'), exportedThroughMs: 1 },
      }),
    );
    await documentClient.send(
      new PutCommand({ TableName: tableName, Item: { PK: pk, SK: leaseSk(destination.id), runId: 'r' } }),
    );
    for (let i = 0; i < 30; i++) {
      const startedAt = new Date(Date.UTC(2026, 8, 30, 0, i)).toISOString();
      await documentClient.send(
        new PutCommand({
          TableName: tableName,
          Item: { PK: runsPk(workspaceId, destination.id), SK: runSk(startedAt, `run_${i}`), id: `run_${i}` },
        }),
      );
    }

    const deleted = await store.deleteDestination(workspaceId, destination.id);
    const again = await store.deleteDestination(workspaceId, destination.id);

    expect(deleted).toBe(true);
    expect(again).toBe(false);
    expect(await store.getDestination(workspaceId, destination.id)).toBeUndefined();
    const left = await documentClient.send(
      new QueryCommand({
        TableName: tableName,
        KeyConditionExpression: 'PK = :pk',
        ExpressionAttributeValues: { ':pk': pk },
      }),
    );
    // The workspace's export count: two created, one deleted (the second delete found nothing to count down).
    expect(left.Items?.map((item) => item.SK)).toEqual([destinationSk(neighbour.id), EXPORT_COUNT_SK]);
    expect(left.Items?.find((item) => item.SK === EXPORT_COUNT_SK)?.exports).toBe(1);
    const runs = await documentClient.send(
      new QueryCommand({
        TableName: tableName,
        KeyConditionExpression: 'PK = :pk',
        ExpressionAttributeValues: { ':pk': runsPk(workspaceId, destination.id) },
      }),
    );
    expect(runs.Items).toEqual([]);
  });
});

describe('ControlStore.queueRun', () => {
  const now = new Date('2026-10-01T08:30:00.000Z');

  it('queues once when two calls race', async () => {
    const workspaceId = newWorkspace();
    const destination = sampleDestination(workspaceId, { nextRunAt: '2026-10-01T09:00:00.000Z' });
    await store.createDestination(destination);

    const results = await Promise.all([
      store.queueRun(workspaceId, destination.id, now),
      store.queueRun(workspaceId, destination.id, now),
    ]);

    expect(results.map((r) => r?.queued).sort()).toEqual([false, true]);
    for (const result of results) {
      expect(result?.destination).toMatchObject({
        status: 'queued',
        manualRunQueued: true,
        nextRunAt: now.toISOString(),
      });
    }
    expect((await dueEntries(workspaceId, destination.id)).map((e) => e.dueAt)).toEqual([
      `${now.toISOString()}#${workspaceId}#${destination.id}`,
    ]);
  });

  it('changes nothing while a run is running', async () => {
    const workspaceId = newWorkspace();
    const destination = sampleDestination(workspaceId, { status: 'running' });
    await store.createDestination(destination);

    const result = await store.queueRun(workspaceId, destination.id, now);

    expect(result?.queued).toBe(false);
    expect(result?.destination).toMatchObject({
      status: 'running',
      manualRunQueued: false,
      nextRunAt: destination.nextRunAt,
    });
  });

  it('never sets due keys on a paused destination', async () => {
    const workspaceId = newWorkspace();
    const destination = sampleDestination(workspaceId, { isEnabled: false, status: 'idle' });
    await store.createDestination(destination);

    const result = await store.queueRun(workspaceId, destination.id, now);

    expect(result?.queued).toBe(false);
    expect(result?.destination.status).toBe('idle');
    expect(await dueEntries(workspaceId, destination.id)).toHaveLength(0);
  });

  it('queues a failed destination again', async () => {
    const workspaceId = newWorkspace();
    const destination = sampleDestination(workspaceId, { status: 'failed' });
    await store.createDestination(destination);

    const result = await store.queueRun(workspaceId, destination.id, now);

    expect(result?.queued).toBe(true);
    expect(result?.destination.status).toBe('queued');
  });
});

describe('ControlStore.listRuns', () => {
  it('returns the last 14 days newest first, limited, in the API shape', async () => {
    const workspaceId = newWorkspace();
    const destination = sampleDestination(workspaceId);
    await store.createDestination(destination);
    const now = new Date('2026-10-20T00:00:00.000Z');
    const starts = [
      '2026-10-01T00:00:00.000Z',
      '2026-10-10T00:00:00.000Z',
      '2026-10-19T00:00:00.000Z',
      '2026-10-05T23:59:59.999Z',
      '2026-10-15T00:00:00.000Z',
    ];
    for (const [i, startedAt] of starts.entries()) {
      await documentClient.send(
        new PutCommand({
          TableName: tableName,
          Item: {
            PK: runsPk(workspaceId, destination.id),
            SK: runSk(startedAt, `run_${i}`),
            id: `run_${i}`,
            destinationId: destination.id,
            workspaceId,
            status: 'succeeded',
            isManual: i === 2,
            rowCount: 10,
            fileCount: 1,
            byteCount: 100,
            stats: { email_events: { rows: 10, files: 1, bytes: 100, fromMs: 1, toMs: 2 } },
            error: null,
            startedAt,
            finishedAt: startedAt,
            expiresAt: runExpiresAt(startedAt),
          },
        }),
      );
    }

    const all = await store.listRuns(workspaceId, destination.id, { limit: 100, now });
    const two = await store.listRuns(workspaceId, destination.id, { limit: 2, now });
    const other = await store.listRuns(newWorkspace(), destination.id, { now });

    expect(all.map((run) => run.startedAt)).toEqual([
      '2026-10-19T00:00:00.000Z',
      '2026-10-15T00:00:00.000Z',
      '2026-10-10T00:00:00.000Z',
    ]);
    expect(two.map((run) => run.id)).toEqual(['run_2', 'run_4']);
    expect(all[0]).toEqual({
      id: 'run_2',
      destinationId: destination.id,
      status: 'succeeded',
      isManual: true,
      rowCount: 10,
      fileCount: 1,
      byteCount: 100,
      stats: { email_events: { rows: 10, files: 1, bytes: 100, fromMs: 1, toMs: 2 } },
      error: null,
      startedAt: '2026-10-19T00:00:00.000Z',
      finishedAt: '2026-10-19T00:00:00.000Z',
    });
    expect(other).toEqual([]);
  });
});

/** The workspace's `EXPORT_COUNT` item's `exports`, or `undefined` when it has none. */
async function exportCount(workspaceId: string): Promise<unknown> {
  const result = await documentClient.send(
    new GetCommand({ TableName: tableName, Key: { PK: workspacePk(workspaceId), SK: EXPORT_COUNT_SK } }),
  );
  return result.Item?.exports;
}

/** Destinations as they were before the count existed: stored, with cursors, and no `EXPORT_COUNT` item. */
async function uncountedDestinations(workspaceId: string, n: number): Promise<Destination[]> {
  const destinations: Destination[] = [];
  for (let i = 0; i < n; i++) {
    const destination = sampleDestination(workspaceId);
    await store.createDestination(destination);
    await documentClient.send(
      new PutCommand({
        TableName: tableName,
        Item: {
          PK: workspacePk(workspaceId),
          SK: cursorSk(destination.id, 'email_events'),
          dataset: 'email_events',
          exportedThroughMs: Date.parse('2026-10-01T00:00:00.000Z'),
        },
      }),
    );
    destinations.push(destination);
  }
  await documentClient.send(
    new DeleteCommand({ TableName: tableName, Key: { PK: workspacePk(workspaceId), SK: EXPORT_COUNT_SK } }),
  );
  return destinations;
}

describe('ControlStore export count of a workspace with exports from before the count', () => {
  it('counts the existing destinations on the first create, so the limit holds at the right number', async () => {
    // Prepare
    const workspaceId = newWorkspace();
    await uncountedDestinations(workspaceId, 2);

    // Act
    await store.createDestination(sampleDestination(workspaceId), { maxPerWorkspace: 4 });
    const countAfterFirst = await exportCount(workspaceId);
    await store.createDestination(sampleDestination(workspaceId), { maxPerWorkspace: 4 });
    const beyond = store.createDestination(sampleDestination(workspaceId), { maxPerWorkspace: 4 });

    // Assess
    expect(countAfterFirst).toBe(3);
    await expect(beyond).rejects.toMatchObject({ code: 'limit_exceeded' });
    expect(await exportCount(workspaceId)).toBe(4);
    expect(await store.listDestinations(workspaceId)).toHaveLength(4);
  });

  it('refuses the first create when the existing destinations already fill the limit, without a count', async () => {
    // Prepare
    const workspaceId = newWorkspace();
    await uncountedDestinations(workspaceId, 3);

    // Act
    const refused = store.createDestination(sampleDestination(workspaceId), { maxPerWorkspace: 3 });

    // Assess
    await expect(refused).rejects.toMatchObject({ code: 'limit_exceeded' });
    expect(await store.listDestinations(workspaceId)).toHaveLength(3);
  });

  it('initialises the count once when first creates run at once', async () => {
    // Prepare
    const workspaceId = newWorkspace();
    await uncountedDestinations(workspaceId, 1);

    // Act
    const outcomes = await Promise.allSettled(
      Array.from({ length: 4 }, () =>
        store.createDestination(sampleDestination(workspaceId), { maxPerWorkspace: 3 }),
      ),
    );

    // Assess
    expect(outcomes.filter((outcome) => outcome.status === 'fulfilled')).toHaveLength(2);
    expect(await exportCount(workspaceId)).toBe(3);
    expect(await store.listDestinations(workspaceId)).toHaveLength(3);
  });

  it('deletes a destination without creating a count when there is none, and never counts below 0', async () => {
    // Prepare
    const workspaceId = newWorkspace();
    const [first, second] = await uncountedDestinations(workspaceId, 2);
    const counted = sampleDestination(workspaceId);
    await store.createDestination(counted); // the count: 3

    // Act
    await documentClient.send(
      new PutCommand({
        TableName: tableName,
        Item: { PK: workspacePk(workspaceId), SK: EXPORT_COUNT_SK, exports: 0 },
      }),
    );
    const deletedAtZero = await store.deleteDestination(workspaceId, counted.id);
    const countAtZero = await exportCount(workspaceId);
    await documentClient.send(
      new DeleteCommand({ TableName: tableName, Key: { PK: workspacePk(workspaceId), SK: EXPORT_COUNT_SK } }),
    );
    const deletedWithout = await store.deleteDestination(workspaceId, first!.id);

    // Assess
    expect(deletedAtZero).toBe(true);
    expect(countAtZero).toBe(0);
    expect(deletedWithout).toBe(true);
    expect(await exportCount(workspaceId)).toBeUndefined();
    expect((await store.listDestinations(workspaceId)).map((d) => d.id)).toEqual([second!.id]);
  });
});
