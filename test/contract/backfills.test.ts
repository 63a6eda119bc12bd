import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
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
      allowedValues: ['email_events', 'sms_events', 'custom_events'],
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
