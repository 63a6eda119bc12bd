import { gunzipSync } from 'node:zlib';
import { generateEvents } from '@sluice/eventlog';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Json as StateJson } from '@sluice/devstack';
import {
  backfillView,
  createLocalExport,
  type E2eHarness,
  exportFiles,
  ingestAll,
  startE2eHarness,
} from './harness.js';

// biome-ignore lint/suspicious/noExplicitAny: response bodies, already checked against the OpenAPI by the client
type Json = Record<string, any>;

const MINUTE_MS = 60_000;
const HOUR_MS = 60 * MINUTE_MS;

let h: E2eHarness;
/** The start of the current UTC hour, less one hour: every event is older than the export lag. */
let endMs: number;

beforeAll(async () => {
  h = await startE2eHarness();
  endMs = Math.floor((Date.now() - 5 * MINUTE_MS) / HOUR_MS) * HOUR_MS - HOUR_MS;
  const ws = h.ws.workspaceId;
  const events = [
    ...generateEvents({
      count: 1_000,
      workspaceId: ws,
      seed: 21,
      from: endMs - 4 * HOUR_MS,
      to: endMs - 1,
      mix: { email_events: 1 },
    }),
    ...generateEvents({
      count: 400,
      workspaceId: ws,
      seed: 22,
      from: endMs - 4 * HOUR_MS,
      to: endMs - 1,
      mix: { custom_events: 1 },
    }),
  ] as unknown as Record<string, unknown>[];
  expect(await ingestAll(h.events, ws, events)).toBe(events.length);
}, 300_000);

afterAll(async () => {
  expect(await h.close()).toEqual([]);
});

/** A permanent bucket error, as the writer throws it (never retried by the state machine). */
function accessDenied(): Error {
  const error = new Error('Access denied to bucket local-exports.');
  error.name = 'BucketAccessDenied';
  return error;
}

function rowsOf(files: Map<string, Buffer>, dataset: string): number {
  let rows = 0;
  for (const [key, bytes] of files) {
    if (!key.includes(`${dataset}-`)) continue;
    const text = gunzipSync(bytes).toString('utf8');
    rows += text === '' ? 0 : text.trimEnd().split('\n').length;
  }
  return rows;
}

describe('a failed backfill retried on the local state machines', () => {
  it('writes only the windows not yet done, keeps what was written, and succeeds', async () => {
    // Prepare: custom_events' writer is refused by the bucket on every attempt, until the backfill fails.
    let refusing = true;
    const written: Json[] = [];
    const workflows = await h.workflows({
      intercept: async (state, input, invoke) => {
        if (state !== 'WriteWindow') return invoke(input);
        const { item, run } = input as Json;
        // The regular export's runs (Dispatch starts them too) are not the backfill's.
        if (run.backfillId === undefined) return invoke(input);
        if (refusing && item.dataset === 'custom_events') throw accessDenied();
        written.push({ refusing, item });
        return invoke(input) as Promise<StateJson>;
      },
    });
    const { id, prefix } = await createLocalExport(h, {
      prefixRoot: 'e2e-backfill-retry/',
      startFromMs: endMs,
      datasets: ['email_events', 'custom_events'],
      frequency: 'hourly',
    });
    const created = await h.ws.client.post<Json>(`/data-exports/${id}/backfills`, {
      from: new Date(endMs - 4 * HOUR_MS).toISOString(),
      to: new Date(endMs).toISOString(),
    });
    expect(created.status).toBe(202);
    const backfillId = created.body.backfill.id as string;
    const input = { workspaceId: h.ws.workspaceId, destinationId: id, trigger: 'backfill' };
    let runs = 0;
    while ((await backfillView(h, id, backfillId)).status !== 'failed' && runs < 8) {
      await workflows.runExportRun(input);
      runs += 1;
    }
    const failed = await backfillView(h, id, backfillId);
    const before = await exportFiles(h, prefix);

    // Act: the retry, then Dispatch starts its run like any due backfill.
    refusing = false;
    const retried = await h.ws.client.post<Json>(`/data-exports/${id}/backfills/${backfillId}/retry`);
    let ticks = 0;
    while ((await backfillView(h, id, backfillId)).status !== 'succeeded' && ticks < 4) {
      await workflows.runDispatch();
      ticks += 1;
    }
    const done = await backfillView(h, id, backfillId);
    const after = await exportFiles(h, prefix);

    // Assess 1: it failed after its attempts, with email_events done and custom_events not begun.
    expect(runs).toBe(5);
    expect(failed.progress).toEqual({
      email_events: { windowsDone: 4, windowsTotal: 4, rows: 1_000, files: 4, bytes: expect.any(Number) },
      custom_events: { windowsDone: 0, windowsTotal: 4, rows: 0, files: 0, bytes: 0 },
    });
    expect(rowsOf(before, 'custom_events')).toBe(0);
    // Assess 2: queued again, then only custom_events' windows written; email_events' files untouched.
    expect(retried.status).toBe(202);
    expect(retried.body.backfill).toMatchObject({ id: backfillId, status: 'queued', error: null });
    const retriedItems = written.filter((entry) => !entry.refusing).map((entry) => entry.item);
    expect(retriedItems.length).toBeGreaterThan(0);
    expect(retriedItems.every((item) => item.dataset === 'custom_events')).toBe(true);
    expect(done.status).toBe('succeeded');
    expect(done.progress).toEqual({
      email_events: { windowsDone: 4, windowsTotal: 4, rows: 1_000, files: 4, bytes: expect.any(Number) },
      custom_events: { windowsDone: 4, windowsTotal: 4, rows: 400, files: 4, bytes: expect.any(Number) },
    });
    for (const [key, bytes] of before) expect(after.get(key)?.equals(bytes), key).toBe(true);
    expect(rowsOf(after, 'custom_events')).toBe(400);
    expect(rowsOf(after, 'email_events')).toBe(1_000);
  });
});
