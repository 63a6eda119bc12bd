import { randomUUID } from 'node:crypto';
import { type Backfill, newDestination } from '@sluice/core';
import { describe, expect, it } from 'vitest';
import { controlTable } from '../../../test/helpers/tables.js';
import { BackfillStore } from './backfills.js';
import { ControlStore } from './destinations.js';

const backfills = new BackfillStore(controlTable);
const destinations = new ControlStore(controlTable);
const NOW = new Date('2026-12-03T12:00:00.000Z');

async function newExport(): Promise<{ workspaceId: string; destinationId: string }> {
  const workspaceId = `ws_${randomUUID()}`;
  const destinationId = `exp_${randomUUID().replaceAll('-', '')}`;
  await destinations.createDestination({
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
      startFrom: NOW.toISOString(),
      now: NOW,
    }),
    status: 'idle',
    manualRunQueued: false,
  });
  return { workspaceId, destinationId };
}

function queued(
  ids: { workspaceId: string; destinationId: string },
  n: number,
  fullHistory = false,
): Backfill {
  const iso = new Date(NOW.getTime() + n).toISOString();
  return {
    id: `bf_${String(n).padStart(24, '0')}`,
    ...ids,
    status: 'queued',
    fullHistory,
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
}

describe('BackfillStore on DynamoDB Local', () => {
  it('lets one backfill of a destination run at a time: a second claim waits until the slot is released or expires', async () => {
    // Prepare
    const ids = await newExport();
    const [a, b] = [queued(ids, 1), queued(ids, 2)];
    expect(await backfills.create(a)).toBe('created');
    expect(await backfills.create(b)).toBe('created');
    const slot = (backfillId: string, runId: string, expiresAtMs: number) => ({
      backfillId,
      runId,
      token: randomUUID(),
      expiresAtMs,
    });

    // Act
    const first = await backfills.claim(
      { ...ids, backfillId: a.id, datasets: a.datasets },
      slot(a.id, 'run_a', NOW.getTime() + 60_000),
      NOW,
    );
    const refused = await backfills.claim(
      { ...ids, backfillId: b.id, datasets: b.datasets },
      slot(b.id, 'run_b', NOW.getTime() + 60_000),
      NOW,
    );
    const retried = await backfills.claim(
      { ...ids, backfillId: a.id, datasets: a.datasets },
      slot(a.id, 'run_a', NOW.getTime() + 60_000),
      NOW,
    );
    const later = new Date(NOW.getTime() + 120_000);
    const afterExpiry = await backfills.claim(
      { ...ids, backfillId: b.id, datasets: b.datasets },
      slot(b.id, 'run_b', later.getTime() + 60_000),
      later,
    );

    // Assess
    expect(first?.backfillId).toBe(a.id);
    expect(refused).toBeUndefined();
    expect(retried?.token).toBe(first?.token);
    expect(afterExpiry?.backfillId).toBe(b.id);
    expect(
      (await backfills.listActive(ids.workspaceId, ids.destinationId)).map((x) => [x.id, x.status]),
    ).toEqual([
      [a.id, 'running'],
      [b.id, 'running'],
    ]);
  });

  it('fences progress saves by the token and by running: a cancel stops the next save', async () => {
    // Prepare
    const ids = await newExport();
    const a = queued(ids, 1);
    await backfills.create(a);
    const slot = await backfills.claim(
      { ...ids, backfillId: a.id, datasets: a.datasets },
      { backfillId: a.id, runId: 'run_a', token: 'tok', expiresAtMs: NOW.getTime() + 60_000 },
      NOW,
    );
    const fence = { ...ids, backfillId: a.id, token: slot!.token, configVersion: 1 };
    const progress = {
      dataset: 'email_events' as const,
      window: '1-2',
      configVersion: 1,
      nextFile: 1,
      maxFile: 0,
      rows: 10,
      files: 1,
      bytes: 100,
      done: false,
      runId: 'run_a',
    };

    // Act
    const saved = await backfills.saveProgress(fence, [progress], NOW, {
      previousNextFile: 0,
      rows: 10,
      files: 1,
      bytes: 100,
    });
    const again = await backfills.saveProgress(fence, [progress], NOW, {
      previousNextFile: 0,
      rows: 10,
      files: 1,
      bytes: 100,
    });
    const stranger = await backfills.saveProgress({ ...fence, token: 'other' }, [progress], NOW);
    await backfills.cancel(ids.workspaceId, ids.destinationId, a.id, NOW);
    const afterCancel = await backfills.saveProgress(fence, [{ ...progress, nextFile: 2 }], NOW);

    // Assess
    expect([saved, again, stranger, afterCancel]).toEqual([
      'saved',
      'already_saved',
      'lease_lost',
      'cancelled',
    ]);
    const stored = await backfills.get(ids.workspaceId, ids.destinationId, a.id);
    expect(stored?.progress.email_events).toMatchObject({ rows: 10, files: 1, bytes: 100 });
    expect(
      (await backfills.getProgress(ids.workspaceId, ids.destinationId, a.id)).get('email_events#1-2')
        ?.nextFile,
    ).toBe(1);
  });

  it('records how far each span is finished with the progress saves and alone, fenced like them', async () => {
    // Prepare: a running backfill stored without `reached` (created before it existed): the claim adds it.
    const ids = await newExport();
    const { reached: _none, ...older } = queued(ids, 1);
    await backfills.create(older as Backfill);
    const slot = await backfills.claim(
      { ...ids, backfillId: older.id, datasets: older.datasets },
      { backfillId: older.id, runId: 'run_a', token: 'tok', expiresAtMs: NOW.getTime() + 60_000 },
      NOW,
    );
    const fence = { ...ids, backfillId: older.id, token: slot!.token, configVersion: 1 };
    const progress = {
      dataset: 'email_events' as const,
      window: '100-200',
      configVersion: 1,
      nextFile: 1,
      maxFile: 0,
      rows: 10,
      files: 1,
      bytes: 100,
      done: true,
      runId: 'run_a',
    };
    const reach = (spanFromMs: number, throughMs: number) => ({
      dataset: 'email_events' as const,
      spanFromMs,
      throughMs,
    });

    // Act: a window of span 100 finished with its save; span 400 finished empty windows (no save).
    const saved = await backfills.saveProgress(fence, [progress], NOW, undefined, reach(100, 200));
    const alone = await backfills.saveReach(fence, reach(400, 700), NOW);
    const stranger = await backfills.saveReach({ ...fence, token: 'other' }, reach(400, 900), NOW);

    // Assess
    expect([saved, alone, stranger]).toEqual(['saved', true, false]);
    const stored = await backfills.get(ids.workspaceId, ids.destinationId, older.id);
    expect(stored?.reached).toEqual({ email_events: { '100': 200, '400': 700 } });
  });

  it('refuses a second full-history backfill within 30 days, and any backfill of a missing destination', async () => {
    const ids = await newExport();
    const since = new Date(NOW.getTime() - 30 * 86_400_000).toISOString();
    expect(await backfills.create(queued(ids, 1, true), { fullHistorySince: since })).toBe('created');
    expect(await backfills.create(queued(ids, 2, true), { fullHistorySince: since })).toBe(
      'full_history_recent',
    );
    const missing = { workspaceId: ids.workspaceId, destinationId: 'exp_missing' };
    expect(await backfills.create(queued(missing, 3))).toBe('destination_missing');
  });
});
