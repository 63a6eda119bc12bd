import { EVENT_DATASETS } from '@sluice/core';
import { randomUUID } from 'node:crypto';
import { BackfillStore } from '@sluice/control';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
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

const HOUR_MS = 3_600_000;

async function newExport(overrides: Record<string, unknown> = {}): Promise<string> {
  const created = await ws.client.post(
    '/data-exports',
    harness.createBody({ datasets: ['email_events', 'custom_events', 'subscribers'], ...overrides }),
  );
  expect(created.status).toBe(201);
  return created.body.dataExport!.id as string;
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

describe('POST /data-exports/{id}/backfills', () => {
  it('queues a range backfill (202) with zero progress on the export grid', async () => {
    // Prepare
    const id = await newExport({ frequency: 'hourly' });
    const to = Math.floor(Date.now() / HOUR_MS) * HOUR_MS - HOUR_MS;

    // Act
    const response = await ws.client.post(`/data-exports/${id}/backfills`, {
      datasets: ['email_events'],
      from: iso(to - 6 * HOUR_MS),
      to: iso(to),
    });

    // Assess
    expect(response.status).toBe(202);
    const backfill = response.body.backfill!;
    expect(backfill.id).toMatch(/^bf_[0-9a-f]{24}$/);
    expect(backfill).toMatchObject({ status: 'queued', datasets: ['email_events'], fullHistory: false });
    expect(backfill.progress).toEqual({
      email_events: { windowsDone: 0, windowsTotal: 6, rows: 0, files: 0, bytes: 0 },
    });
  });

  it('defaults datasets to the export event datasets', async () => {
    const id = await newExport();
    const now = Date.now();
    const response = await ws.client.post(`/data-exports/${id}/backfills`, {
      from: iso(now - 2 * HOUR_MS),
      to: iso(now - HOUR_MS),
    });
    expect(response.status).toBe(202);
    expect(response.body.backfill!.datasets).toEqual(['email_events', 'custom_events']);
  });

  it.each([
    ['a range over 7 days', { from: -8 * 24, to: -1 }, 'to', 'at most 7 days'],
    ['a range ending in the future', { from: -2, to: 2 }, 'to', 'cannot be in the future'],
    [
      'a range before the earliest available data',
      { from: -40 * 24, to: -39 * 24 },
      'from',
      'earliest available',
    ],
    ['to before from', { from: -2, to: -3 }, 'to', 'after from'],
  ])('refuses %s with 400 invalid_input', async (_name, hours, path, message) => {
    // Prepare
    const id = await newExport();
    const now = Date.now();

    // Act
    const response = await ws.client.post(`/data-exports/${id}/backfills`, {
      from: iso(now + hours.from * HOUR_MS),
      to: iso(now + hours.to * HOUR_MS),
    });

    // Assess
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ success: false, code: 'invalid_input' });
    expect(response.body.issues).toContainEqual(
      expect.objectContaining({ path, message: expect.stringContaining(message) }),
    );
  });

  it('refuses an unknown dataset with 422 and the allowed values', async () => {
    const id = await newExport();
    const now = Date.now();
    const response = await ws.client.post(`/data-exports/${id}/backfills`, {
      datasets: ['page_views'],
      from: iso(now - 2 * HOUR_MS),
      to: iso(now - HOUR_MS),
    });
    expect(response.status).toBe(422);
    expect(response.body.code).toBe('unprocessable_entity');
    expect(response.body.issues?.[0]).toMatchObject({
      path: 'datasets[0]',
      allowedValues: [...EVENT_DATASETS],
    });
  });

  it('refuses a dataset the export does not export, an unknown field and a missing to, with 400', async () => {
    const id = await newExport();
    const response = await ws.client.post(`/data-exports/${id}/backfills`, {
      datasets: ['sms_events'],
      from: iso(Date.now() - HOUR_MS),
      window: 'x',
    });
    expect(response.status).toBe(400);
    expect(response.body.issues?.map((issue) => issue.path).sort()).toEqual(['datasets[0]', 'to', 'window']);
  });

  it('allows one full-history backfill per 30 days (409 full_history_recent after)', async () => {
    // Prepare
    const id = await newExport();

    // Act
    const first = await ws.client.post(`/data-exports/${id}/backfills`, { from: 'earliest' });
    const second = await ws.client.post(`/data-exports/${id}/backfills`, { from: 'earliest' });

    // Assess
    expect(first.status).toBe(202);
    expect(first.body.backfill).toMatchObject({ fullHistory: true, status: 'queued' });
    expect(second.status).toBe(409);
    expect(second.body).toMatchObject({ success: false, code: 'full_history_recent' });
  });

  it('refuses a paused export (409) and another workspace export (404)', async () => {
    const id = await newExport();
    await ws.client.patch(`/data-exports/${id}`, { isEnabled: false });
    const now = Date.now();
    const body = { from: iso(now - 2 * HOUR_MS), to: iso(now - HOUR_MS) };
    const paused = await ws.client.post(`/data-exports/${id}/backfills`, body);
    expect(paused.status).toBe(409);
    expect(paused.body.code).toBe('destination_disabled');
    const other = await harness.newWorkspace();
    const foreign = await other.client.post(`/data-exports/${id}/backfills`, body);
    expect(foreign.status).toBe(404);
  });

  it('needs data_exports:write (403 with read only)', async () => {
    const id = await newExport();
    const reader = await ws.clientWith({ scopes: ['data_exports:read'] });
    const response = await reader.post(`/data-exports/${id}/backfills`, { from: 'earliest' });
    expect(response.status).toBe(403);
    const list = await reader.get(`/data-exports/${id}/backfills`);
    expect(list.status).toBe(200);
  });
});

describe('GET and DELETE /data-exports/{id}/backfills', () => {
  it('lists newest first in pages, gets one, and cancels it once (409 after)', async () => {
    // Prepare
    const id = await newExport();
    const now = Date.now();
    const ids: string[] = [];
    // A given clock, one millisecond apart per backfill: ids sort by creation time.
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      for (let i = 3; i >= 1; i--) {
        vi.setSystemTime(now + 4 - i);
        const created = await ws.client.post(`/data-exports/${id}/backfills`, {
          from: iso(now - (i + 1) * HOUR_MS),
          to: iso(now - i * HOUR_MS),
        });
        ids.push(created.body.backfill!.id);
      }
    } finally {
      vi.useRealTimers();
    }

    // Act
    const first = await ws.client.get(`/data-exports/${id}/backfills?limit=2`);
    const second = await ws.client.get(
      `/data-exports/${id}/backfills?limit=2&nextToken=${encodeURIComponent(first.body.nextToken!)}`,
    );
    const one = await ws.client.get(`/data-exports/${id}/backfills/${ids[0]}`);
    const cancelled = await ws.client.delete(`/data-exports/${id}/backfills/${ids[0]}`);
    const again = await ws.client.delete(`/data-exports/${id}/backfills/${ids[0]}`);
    const after = await ws.client.get(`/data-exports/${id}/backfills/${ids[0]}`);

    // Assess
    expect(first.body.backfills!.map((b) => b.id)).toEqual([ids[2], ids[1]]);
    expect(second.body.backfills!.map((b) => b.id)).toEqual([ids[0]]);
    expect(second.body.nextToken).toBeUndefined();
    expect(one.body.backfill!.id).toBe(ids[0]);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.backfill!.status).toBe('cancelled');
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('backfill_finished');
    expect(after.body.backfill!.status).toBe('cancelled');
    expect(after.body.backfill!.finishedAt).not.toBeNull();
  });

  it('answers 404 for an unknown or malformed backfill id and 400 for a bad nextToken', async () => {
    const id = await newExport();
    expect((await ws.client.get(`/data-exports/${id}/backfills/bf_000000000000000000000000`)).status).toBe(
      404,
    );
    expect((await ws.client.get(`/data-exports/${id}/backfills/nope`)).status).toBe(404);
    expect((await ws.client.delete(`/data-exports/${id}/backfills/nope`)).status).toBe(404);
    const bad = await ws.client.get(`/data-exports/${id}/backfills?nextToken=xyz`);
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe('invalid_input');
  });
});

/** What the engine does when a backfill's chunk failed its last attempt: claim it, then commit it failed. */
async function failBackfill(id: string, backfillId: string): Promise<void> {
  const store = new BackfillStore(controlTable);
  const now = new Date();
  const ids = { workspaceId: ws.workspaceId, destinationId: id, backfillId };
  const slot = await store.claim(
    { ...ids, datasets: ['email_events'] },
    { backfillId, runId: `run_${randomUUID()}`, token: randomUUID(), expiresAtMs: now.getTime() + 60_000 },
    now,
  );
  expect(slot).toBeDefined();
  const committed = await store.commit(
    { ...ids, token: slot!.token },
    {
      doneThroughMs: {},
      reached: {},
      status: 'failed',
      attempts: 5,
      error: 'The bucket refused the upload.',
      dueAt: null,
    },
    now,
  );
  expect(committed).toBe(true);
}

describe('POST /data-exports/{id}/backfills/{backfillId}/retry', () => {
  it('queues a failed backfill again (202), once: attempts and error cleared, due now', async () => {
    // Prepare
    const id = await newExport({ frequency: 'hourly' });
    const to = Math.floor(Date.now() / HOUR_MS) * HOUR_MS - HOUR_MS;
    const created = await ws.client.post(`/data-exports/${id}/backfills`, {
      datasets: ['email_events'],
      from: iso(to - 3 * HOUR_MS),
      to: iso(to),
    });
    const backfillId = created.body.backfill!.id as string;
    await failBackfill(id, backfillId);
    const failed = await ws.client.get(`/data-exports/${id}/backfills/${backfillId}`);

    // Act
    const retried = await ws.client.post(`/data-exports/${id}/backfills/${backfillId}/retry`);
    const again = await ws.client.post(`/data-exports/${id}/backfills/${backfillId}/retry`);
    const due = await new BackfillStore(controlTable).queryDue(new Date(), 1_000);

    // Assess
    expect(failed.body.backfill).toMatchObject({ status: 'failed', error: 'The bucket refused the upload.' });
    expect(retried.status).toBe(202);
    expect(retried.body.backfill).toMatchObject({
      id: backfillId,
      status: 'queued',
      error: null,
      finishedAt: null,
    });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ success: false, code: 'backfill_not_failed' });
    expect(due.map((entry) => entry.backfillId)).toContain(backfillId);
  });

  it('answers 404 for an unknown, malformed or foreign backfill, 409 for one not failed or a paused export, 403 read only', async () => {
    // Prepare
    const id = await newExport();
    const now = Date.now();
    const created = await ws.client.post(`/data-exports/${id}/backfills`, {
      from: iso(now - 2 * HOUR_MS),
      to: iso(now - HOUR_MS),
    });
    const backfillId = created.body.backfill!.id as string;
    const reader = await ws.clientWith({ scopes: ['data_exports:read'] });
    const other = await harness.newWorkspace();
    const path = `/data-exports/${id}/backfills/${backfillId}/retry`;

    // Act
    const unknown = await ws.client.post(`/data-exports/${id}/backfills/bf_000000000000000000000000/retry`);
    const malformed = await ws.client.post(`/data-exports/${id}/backfills/nope/retry`);
    const foreign = await other.client.post(path);
    const readOnly = await reader.post(path);
    const queued = await ws.client.post(path);
    await failBackfill(id, backfillId);
    await ws.client.patch(`/data-exports/${id}`, { isEnabled: false });
    const paused = await ws.client.post(path);

    // Assess
    expect([unknown.status, malformed.status, foreign.status]).toEqual([404, 404, 404]);
    expect(unknown.body).toMatchObject({ success: false, code: 'not_found' });
    expect(readOnly.status).toBe(403);
    expect(queued.status).toBe(409);
    expect(queued.body.code).toBe('backfill_not_failed');
    expect(paused.status).toBe(409);
    expect(paused.body.code).toBe('destination_disabled');
  });
});

describe('the 30-day full-history allowance', () => {
  it('is not used up by a cancelled full history', async () => {
    // Prepare
    const id = await newExport();
    const first = await ws.client.post(`/data-exports/${id}/backfills`, { from: 'earliest' });
    await ws.client.delete(`/data-exports/${id}/backfills/${first.body.backfill!.id}`);

    // Act
    const second = await ws.client.post(`/data-exports/${id}/backfills`, { from: 'earliest' });
    const third = await ws.client.post(`/data-exports/${id}/backfills`, { from: 'earliest' });

    // Assess: the cancelled one gave the allowance back; the second holds it.
    expect(second.status).toBe(202);
    expect(third.status).toBe(409);
    expect(third.body.code).toBe('full_history_recent');
  });

  it('is not used up by a failed full history, which takes it again when retried while it is free', async () => {
    // Prepare: full history A failed; B started meanwhile.
    const id = await newExport();
    const a = (await ws.client.post(`/data-exports/${id}/backfills`, { from: 'earliest' })).body.backfill!;
    await failBackfill(id, a.id);
    const b = await ws.client.post(`/data-exports/${id}/backfills`, { from: 'earliest' });

    // Act
    const whileHeld = await ws.client.post(`/data-exports/${id}/backfills/${a.id}/retry`);
    await ws.client.delete(`/data-exports/${id}/backfills/${b.body.backfill!.id}`);
    const afterCancel = await ws.client.post(`/data-exports/${id}/backfills/${a.id}/retry`);
    const another = await ws.client.post(`/data-exports/${id}/backfills`, { from: 'earliest' });

    // Assess
    expect(b.status).toBe(202);
    expect(whileHeld.status).toBe(409);
    expect(whileHeld.body.code).toBe('full_history_recent');
    expect(afterCancel.status).toBe(202);
    expect(afterCancel.body.backfill).toMatchObject({ id: a.id, status: 'queued', fullHistory: true });
    expect(another.status).toBe(409);
    expect(another.body.code).toBe('full_history_recent');
  });
});
