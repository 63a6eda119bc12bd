import { randomUUID } from 'node:crypto';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { type Destination, newDestination } from '@sluice/core';
import { describe, expect, it } from 'vitest';
import { documentClient } from './client.js';
import { ControlStore } from './destinations.js';
import { ExportStateStore, type Lease } from './export-state.js';
import { dueKey } from './due-index.js';
import { destinationSk, workspacePk } from './items.js';

const tableName = process.env.SLUICE_CONTROL_TABLE as string;
const control = new ControlStore();
const state = new ExportStateStore();
const NOW = Date.parse('2026-09-30T12:00:00.000Z');

function sampleDestination(overrides: Partial<Destination> = {}): Destination {
  const now = new Date(NOW);
  return {
    ...newDestination({
      workspaceId: `ws_${randomUUID()}`,
      id: `exp_${randomUUID().replaceAll('-', '')}`,
      name: 'Lake',
      provider: 's3',
      bucket: 'acme-exports',
      region: 'us-east-1',
      endpoint: null,
      pathPrefix: 'sluice',
      accessKeyId: 'AKIAABCDEFGHWXYZ',
      secret: { encryptedDataKey: 'a2V5', iv: 'aXY=', ciphertext: 'Y3Q=', tag: 'dGFn' },
      datasets: ['email_events', 'subscribers'],
      frequency: 'every_15_minutes',
      startFrom: now.toISOString(),
      now,
    }),
    status: 'idle',
    manualRunQueued: false,
    exportedThrough: {},
    ...overrides,
  };
}

async function rawDestination(destination: Destination): Promise<Record<string, unknown> | undefined> {
  const result = await documentClient.send(
    new GetCommand({
      TableName: tableName,
      Key: { PK: workspacePk(destination.workspaceId), SK: destinationSk(destination.id) },
      ConsistentRead: true,
    }),
  );
  return result.Item;
}

function claim(destination: Destination, runId: string, nowMs = NOW, durationMs = 360_000) {
  return state.claimLease({
    workspaceId: destination.workspaceId,
    destinationId: destination.id,
    runId,
    token: randomUUID(),
    startedAt: new Date(nowMs).toISOString(),
    nowMs,
    durationMs,
  });
}

describe('ExportStateStore leases', () => {
  it('lets exactly one of two concurrent claimers hold the lease', async () => {
    // Prepare
    const destination = await control.createDestination(sampleDestination());
    // Act
    const results = await Promise.all([claim(destination, 'run_a'), claim(destination, 'run_b')]);
    // Assess
    const winners = results.filter((lease) => lease !== undefined);
    expect(winners).toHaveLength(1);
    const stored = await state.getLease(destination.workspaceId, destination.id);
    expect(stored?.token).toBe(winners[0]?.token);
  });

  it('gives the same run its lease back, refuses another live run, and hands over an expired lease', async () => {
    const destination = await control.createDestination(sampleDestination());
    const first = (await claim(destination, 'run_a')) as Lease;
    const again = await claim(destination, 'run_a', NOW + 1000);
    expect(again?.token).toBe(first.token);
    expect(again?.startedAt).toBe(first.startedAt);
    expect(await claim(destination, 'run_b', NOW + 1000)).toBeUndefined();
    const later = await claim(destination, 'run_b', first.expiresAtMs + 1);
    expect(later?.runId).toBe('run_b');
    expect(await state.releaseLease(first)).toBe(false);
    expect(await state.releaseLease(later as Lease)).toBe(true);
    expect(await state.getLease(destination.workspaceId, destination.id)).toBeUndefined();
  });
});

describe('ExportStateStore cursors', () => {
  it('stores planned windows under the lease and reads them back', async () => {
    const destination = await control.createDestination(sampleDestination());
    const lease = (await claim(destination, 'run_a')) as Lease;
    const saved = await state.savePlanned(
      { lease },
      [
        {
          dataset: 'email_events',
          expected: {},
          plannedWindows: [
            { fromMs: 1, toMs: 2, runId: 'run_a' },
            { fromMs: 2, toMs: 3, runId: 'run_a' },
          ],
        },
        { dataset: 'subscribers', expected: {}, plannedSnapshot: { date: '2026-09-30', runId: 'run_a' } },
      ],
      new Date(NOW),
    );
    expect(saved).toBe(true);
    const cursors = await state.getCursors(destination.workspaceId, destination.id);
    expect(cursors.get('email_events')?.plannedWindows).toEqual([
      { fromMs: 1, toMs: 2, runId: 'run_a' },
      { fromMs: 2, toMs: 3, runId: 'run_a' },
    ]);
    expect(cursors.get('email_events')?.exportedThroughMs).toBeUndefined();
    expect(cursors.get('subscribers')?.plannedSnapshot).toEqual({ date: '2026-09-30', runId: 'run_a' });
    expect(cursors.get('sms_events')?.plannedWindows).toEqual([]);
  });

  it('refuses cursor writes with a token that does not hold the lease', async () => {
    const destination = await control.createDestination(sampleDestination());
    const lease = (await claim(destination, 'run_a')) as Lease;
    const ok = await state.advanceCursors(
      { lease: { ...lease, token: 'not-the-token' } },
      [{ dataset: 'email_events', expected: {}, next: { exportedThroughMs: 10 } }],
      new Date(NOW),
    );
    expect(ok).toBe(false);
    const cursors = await state.getCursors(destination.workspaceId, destination.id);
    expect(cursors.get('email_events')?.exportedThroughMs).toBeUndefined();
  });

  it('lets only one of two concurrent advances from the same old value move the cursor', async () => {
    const destination = await control.createDestination(sampleDestination());
    const lease = (await claim(destination, 'run_a')) as Lease;
    await state.advanceCursors(
      { lease },
      [{ dataset: 'email_events', expected: {}, next: { exportedThroughMs: 100 } }],
      new Date(NOW),
    );
    const results = await Promise.all(
      [200, 300].map((to) =>
        state.advanceCursors(
          { lease },
          [
            {
              dataset: 'email_events',
              expected: { exportedThroughMs: 100 },
              next: { exportedThroughMs: to },
              plannedWindows: [],
            },
          ],
          new Date(NOW),
        ),
      ),
    );
    expect(results.filter(Boolean)).toHaveLength(1);
    const cursor = (await state.getCursors(destination.workspaceId, destination.id)).get('email_events');
    expect(cursor?.exportedThroughMs).toBe(results[0] ? 200 : 300);
  });

  it('lets the dispatcher advance only while no live lease is held', async () => {
    const destination = await control.createDestination(sampleDestination());
    const fence = { noLiveLeaseAt: NOW, workspaceId: destination.workspaceId, destinationId: destination.id };
    const write = { dataset: 'email_events' as const, expected: {}, next: { exportedThroughMs: 5 } };
    await claim(destination, 'run_a');
    expect(await state.advanceCursors(fence, [write], new Date(NOW))).toBe(false);
    expect(
      await state.advanceCursors({ ...fence, noLiveLeaseAt: NOW + 3_600_000 }, [write], new Date(NOW)),
    ).toBe(true);
  });
});

describe('ExportStateStore runs and destination run state', () => {
  it('writes a run record and finishes it with its totals and a 14-day expiry', async () => {
    const destination = await control.createDestination(sampleDestination());
    const startedAt = new Date(NOW).toISOString();
    const run = {
      workspaceId: destination.workspaceId,
      id: 'run_x',
      destinationId: destination.id,
      status: 'running' as const,
      isManual: true,
      rowCount: 0,
      fileCount: 0,
      byteCount: 0,
      stats: {},
      error: null,
      startedAt,
      finishedAt: null,
    };
    await state.putRun(run);
    await state.finishRun(run, {
      status: 'succeeded',
      rowCount: 7,
      fileCount: 1,
      byteCount: 99,
      stats: { email_events: { rows: 7, files: 1, bytes: 99, fromMs: 1, toMs: 2 } },
      error: null,
      finishedAt: new Date(NOW + 5000).toISOString(),
    });
    const stored = await state.getRun(destination.workspaceId, destination.id, startedAt, 'run_x');
    expect(stored).toMatchObject({ status: 'succeeded', rowCount: 7, isManual: true, error: null });
    const runs = await control.listRuns(destination.workspaceId, destination.id, { now: new Date(NOW) });
    expect(runs.map((r) => r.id)).toEqual(['run_x']);
  });

  it('updates run state, adds exported rows and keeps the due index only while enabled', async () => {
    const destination = await control.createDestination(sampleDestination({ totalRowsExported: 5 }));
    const next = new Date(NOW + 900_000).toISOString();
    expect(
      await state.updateRunState(
        destination.workspaceId,
        destination.id,
        {
          status: 'idle',
          nextRunAt: next,
          lastError: null,
          consecutiveFailures: 0,
          addRowsExported: 10,
          manualRunQueued: false,
        },
        new Date(NOW),
      ),
    ).toBe(true);
    let item = await rawDestination(destination);
    expect(item).toMatchObject({
      status: 'idle',
      nextRunAt: next,
      totalRowsExported: 15,
      dueKey: dueKey(destination.id),
    });
    expect(item?.dueAt).toBe(`${next}#${destination.workspaceId}#${destination.id}`);

    await control.updateDestination(destination.workspaceId, destination.id, { isEnabled: false });
    expect(
      await state.updateRunState(
        destination.workspaceId,
        destination.id,
        { status: 'failed', nextRunAt: next, consecutiveFailures: 'increment' },
        new Date(NOW),
      ),
    ).toBe(true);
    item = await rawDestination(destination);
    expect(item?.dueKey).toBeUndefined();
    expect(item?.dueAt).toBeUndefined();
    expect(item?.consecutiveFailures).toBe(1);
  });

  it('never creates a destination item and honours the expected configVersion', async () => {
    const destination = sampleDestination();
    expect(
      await state.updateRunState(destination.workspaceId, destination.id, { status: 'idle' }, new Date(NOW)),
    ).toBe(false);
    expect(await rawDestination(destination)).toBeUndefined();
    await control.createDestination(destination);
    expect(
      await state.updateRunState(
        destination.workspaceId,
        destination.id,
        { status: 'failed', expectedConfigVersion: 2 },
        new Date(NOW),
      ),
    ).toBe(false);
    expect((await rawDestination(destination))?.status).toBe('idle');
  });

  it('finds due destinations and lets only one of two dispatchers mark one started', async () => {
    const destination = await control.createDestination(
      sampleDestination({ nextRunAt: new Date(NOW - 1000).toISOString() }),
    );
    const future = await control.createDestination(
      sampleDestination({ nextRunAt: new Date(NOW + 3_600_000).toISOString() }),
    );
    const due = await state.queryDue(new Date(NOW));
    const entry = due.find((e) => e.destinationId === destination.id);
    expect(entry).toMatchObject({
      workspaceId: destination.workspaceId,
      status: 'idle',
      manualRunQueued: false,
    });
    expect(due.some((e) => e.destinationId === future.id)).toBe(false);
    if (entry === undefined) throw new Error('not due');
    const until = new Date(NOW + 360_000).toISOString();
    const marks = await Promise.all([state.markDispatched(entry, until), state.markDispatched(entry, until)]);
    expect(marks.filter(Boolean)).toHaveLength(1);
    const after = await state.queryDue(new Date(NOW));
    expect(after.some((e) => e.destinationId === destination.id)).toBe(false);
  });
});
