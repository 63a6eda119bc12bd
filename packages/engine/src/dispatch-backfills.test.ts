import { randomBytes, randomUUID } from 'node:crypto';
import {
  BackfillStore,
  ControlStore,
  CursorStore,
  DueIndex,
  LeaseStore,
  RunStateStore,
  RunStore,
} from '@sluice/control';
import { type Backfill, CONTROL_TABLE, newDestination } from '@sluice/core';
import { beforeAll, describe, expect, it } from 'vitest';
import { createLocalTables, localDynamoDbClient } from '@sluice/devstack';
import type { EngineDeps } from './deps.js';
import { DISPATCH_BACKFILL_EXAMINED, findDueDestinations, PAUSED_BACKFILL_RECHECK_MS } from './dispatch.js';
import type { DueDestination } from './payloads.js';
import { LEASE_DURATION_MS } from './positions.js';

/**
 * Dispatch of due backfills (issue 22, defect 6): one workspace's queue of backfills on a paused export, or
 * many queued behind one running backfill, never keeps another workspace's backfill from starting. On
 * DynamoDB Local, in this file's own control table (the due backfills share one index partition).
 */

const table = { tableName: `sluice-control-bfdispatch-${randomBytes(6).toString('hex')}` };
const NOW = Date.parse('2026-12-04T12:00:00.000Z');
const QUEUED = 150;

function deps(): Partial<EngineDeps> {
  return {
    controlStore: new ControlStore(table),
    backfills: new BackfillStore(table),
    dueIndex: new DueIndex(table),
    leases: new LeaseStore(table),
    cursors: new CursorStore(table),
    runs: new RunStore(table),
    runState: new RunStateStore(table),
  };
}

async function createExport(isEnabled: boolean): Promise<{ workspaceId: string; destinationId: string }> {
  const workspaceId = `ws_${randomUUID()}`;
  const destinationId = `exp_${randomUUID().replaceAll('-', '')}`;
  await new ControlStore(table).createDestination({
    ...newDestination({
      workspaceId,
      id: destinationId,
      name: 'Lake',
      provider: 's3',
      bucket: 'acme-exports',
      region: 'us-east-1',
      endpoint: null,
      pathPrefix: 'sluice',
      accessKeyId: 'AKIAABCDEFGHWXYZ',
      secret: { encryptedDataKey: 'a2V5', iv: 'aXY=', ciphertext: 'Y3Q=', tag: 'dGFn' },
      datasets: ['email_events'],
      frequency: 'hourly',
      startFrom: new Date(NOW - 86_400_000).toISOString(),
      now: new Date(NOW - 86_400_000),
    }),
    status: 'idle',
    manualRunQueued: false,
    // Not due itself: only its backfills are.
    nextRunAt: null,
    isEnabled,
  });
  return { workspaceId, destinationId };
}

/** `count` queued backfills of an export, created one millisecond apart from `createdAtMs`. */
async function queue(
  ids: { workspaceId: string; destinationId: string },
  count: number,
  createdAtMs: number,
) {
  const store = new BackfillStore(table);
  const backfills = Array.from({ length: count }, (_, n): Backfill => {
    const iso = new Date(createdAtMs + n).toISOString();
    return {
      id: `bf_${String(n).padStart(24, '0')}`,
      ...ids,
      status: 'queued',
      fullHistory: false,
      datasets: ['email_events'],
      from: '2026-12-01T00:00:00.000Z',
      to: '2026-12-02T00:00:00.000Z',
      range: {
        fromMs: Date.parse('2026-12-01T00:00:00.000Z') - 1,
        toMs: Date.parse('2026-12-02T00:00:00.000Z') - 1,
        stepMs: 3_600_000,
      },
      doneThroughMs: {},
      reached: {},
      progress: { email_events: { windowsDone: 0, windowsTotal: 0, rows: 0, files: 0, bytes: 0 } },
      attempts: 0,
      error: null,
      createdAt: iso,
      startedAt: null,
      finishedAt: null,
      updatedAt: iso,
    };
  });
  for (let i = 0; i < backfills.length; i += 25) {
    const created = await Promise.all(backfills.slice(i, i + 25).map((backfill) => store.create(backfill)));
    expect(created.every((outcome) => outcome === 'created')).toBe(true);
  }
}

async function tick(atMs: number): Promise<DueDestination[]> {
  const { destinations, next } = await findDueDestinations({ now: new Date(atMs).toISOString() }, deps());
  expect(next).toBeUndefined();
  return destinations.filter((destination) => destination.trigger === 'backfill');
}

beforeAll(async () => {
  const dynamo = localDynamoDbClient(process.env.AWS_ENDPOINT_URL_DYNAMODB as string);
  await createLocalTables(dynamo, [{ name: table.tableName, spec: CONTROL_TABLE }]);
  dynamo.destroy();
}, 60_000);

describe('Dispatch of due backfills', () => {
  it('starts another workspace’s backfill behind a long queue on a paused export and one behind a running one', async () => {
    // Prepare: the oldest due entries are 150 backfills of a paused export, then 150 of an enabled export
    // (one runs at a time), then one backfill of another workspace.
    expect(2 * QUEUED).toBeLessThan(DISPATCH_BACKFILL_EXAMINED);
    const paused = await createExport(false);
    const busy = await createExport(true);
    const other = await createExport(true);
    await queue(paused, QUEUED, NOW - 30 * 60_000);
    await queue(busy, QUEUED, NOW - 20 * 60_000);
    await queue(other, 1, NOW - 60_000);

    // Act: the first tick
    const first = await tick(NOW);

    // Assess: the other workspace's backfill and the enabled export's start, once each; not the paused one
    expect(first.map((start) => start.destinationId).sort()).toEqual(
      [busy.destinationId, other.destinationId].sort(),
    );

    // The entries it skipped are out of the way: the next ticks start nothing again.
    expect(await tick(NOW + 60_000)).toEqual([]);
    expect(await tick(NOW + 120_000)).toEqual([]);

    // Resumed, the paused export's backfills start within the recheck interval.
    await new ControlStore(table).updateDestination(paused.workspaceId, paused.destinationId, {
      isEnabled: true,
    });
    const resumed = await tick(NOW + PAUSED_BACKFILL_RECHECK_MS + 1);
    expect(resumed.map((start) => start.destinationId)).toEqual([paused.destinationId]);
    // Started runs that never claimed (none runs here) come due again once their lease time has passed.
    const later = await tick(NOW + LEASE_DURATION_MS + 1);
    expect(later.map((start) => start.destinationId).sort()).toEqual(
      [busy.destinationId, other.destinationId].sort(),
    );
  }, 120_000);
});
