import { gunzipSync } from 'node:zlib';
import { BackfillStore } from '@sluice/control';
import { generateEvents } from '@sluice/eventlog';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Json as StateJson } from '@sluice/devstack';
import {
  backfillView,
  createLocalExport,
  type E2eHarness,
  exportFiles,
  ingestAll,
  manualRunInput,
  startE2eHarness,
} from './harness.js';

// biome-ignore lint/suspicious/noExplicitAny: response bodies, already checked against the OpenAPI by the client
type Json = Record<string, any>;

const MINUTE_MS = 60_000;
const HOUR_MS = 60 * MINUTE_MS;

let h: E2eHarness;
/** The start of the current UTC hour, less one hour: every event is older than the export lag. */
let endMs: number;
/** Every event ingested into the workspace, for the expected counts. */
const ingested: { dataset: string; recorded: number }[] = [];

async function ingest(events: ReturnType<typeof generateEvents> extends Generator<infer E> ? E[] : never) {
  const rows = events as unknown as Record<string, unknown>[];
  expect(await ingestAll(h.events, h.ws.workspaceId, rows)).toBe(rows.length);
  for (const row of rows) {
    ingested.push({ dataset: String(row.dataset), recorded: Date.parse(String(row.recorded_at)) });
  }
}

beforeAll(async () => {
  h = await startE2eHarness();
  endMs = Math.floor((Date.now() - 5 * MINUTE_MS) / HOUR_MS) * HOUR_MS - HOUR_MS;
  // 3,000 email events over the 5 hours before endMs, 600 custom events: five hourly windows each.
  const ws = h.ws.workspaceId;
  const events = [
    ...generateEvents({
      count: 3_000,
      workspaceId: ws,
      seed: 11,
      from: endMs - 5 * HOUR_MS,
      to: endMs - 1,
      mix: { email_events: 1 },
    }),
    ...generateEvents({
      count: 600,
      workspaceId: ws,
      seed: 12,
      from: endMs - 5 * HOUR_MS,
      to: endMs - 1,
      mix: { custom_events: 1 },
    }),
  ];
  await ingest(events);
}, 300_000);

afterAll(async () => {
  expect(await h.close()).toEqual([]);
});

async function newBackfill(id: string, body: Json): Promise<Json> {
  const created = await h.ws.client.post<Json>(`/data-exports/${id}/backfills`, body);
  expect(created.status).toBe(202);
  return created.body.backfill;
}

function backfillInput(id: string) {
  return { workspaceId: h.ws.workspaceId, destinationId: id, trigger: 'backfill' };
}

describe('range backfills on the local state machines', () => {
  it('write every row once per window, in the same files with the same bytes as the regular export, without moving its cursor', async () => {
    // Prepare: the regular export of those 5 hours, then its files put aside and the bucket emptied.
    const workflows = await h.workflows();
    const { id, prefix } = await createLocalExport(h, {
      prefixRoot: 'e2e-backfill/',
      startFromMs: endMs - 5 * HOUR_MS,
      datasets: ['email_events', 'custom_events'],
      frequency: 'hourly',
    });
    for (let run = 0; run < 5; run++) {
      const outcome = await workflows.runExportRun(manualRunInput(h, id));
      expect(outcome.status).toBe('succeeded');
      if (!outcome.runAgain) break;
    }
    const regular = await exportFiles(h, prefix);
    expect(regular.size).toBe(10);
    const cursorsBefore = await h.cursors.get(h.ws.workspaceId, id);
    await h.clear(prefix);

    // Act: a backfill of the same range, started by Dispatch as an ExportRun with the trigger backfill.
    const backfill = await newBackfill(id, {
      datasets: ['email_events', 'custom_events'],
      from: new Date(endMs - 5 * HOUR_MS).toISOString(),
      to: new Date(endMs).toISOString(),
    });
    const started = [];
    for (let tick = 0; tick < 5; tick++) {
      const outcome = await workflows.runDispatch();
      started.push(...outcome.runs.filter((run) => (run.input as Json).trigger === 'backfill'));
      if ((await backfillView(h, id, backfill.id)).status !== 'running' && started.length > 0) break;
    }
    const done = await backfillView(h, id, backfill.id);
    const written = await exportFiles(h, prefix);

    // Assess: the same names and bytes, every row once and inside its window; the cursors untouched.
    expect(started.length).toBeGreaterThanOrEqual(1);
    expect(done.status).toBe('succeeded');
    expect([...written.keys()].sort()).toEqual([...regular.keys()].sort());
    for (const [key, bytes] of regular) expect(written.get(key)?.equals(bytes), key).toBe(true);
    const ids = new Set<string>();
    let rows = 0;
    for (const [key, bytes] of written) {
      const [, fromMs, toMs] = /-(\d+)-(\d+)-\d{4}\.jsonl\.gz$/.exec(key)!.map(Number) as [
        number,
        number,
        number,
      ];
      for (const line of gunzipSync(bytes).toString('utf8').trimEnd().split('\n')) {
        const row = JSON.parse(line) as { id: string; recorded_at?: string; timestamp?: string };
        ids.add(row.id);
        rows += 1;
        const recorded = Date.parse(row.recorded_at ?? row.timestamp ?? '');
        if (Number.isFinite(recorded)) {
          expect(recorded).toBeGreaterThan(fromMs);
          expect(recorded).toBeLessThanOrEqual(toMs);
        }
      }
    }
    expect(rows).toBe(3_600);
    expect(ids.size).toBe(3_600);
    expect(done.progress).toEqual({
      email_events: { windowsDone: 5, windowsTotal: 5, rows: 3_000, files: 5, bytes: expect.any(Number) },
      custom_events: { windowsDone: 5, windowsTotal: 5, rows: 600, files: 5, bytes: expect.any(Number) },
    });
    expect(await h.cursors.get(h.ws.workspaceId, id)).toEqual(cursorsBefore);
  });

  it('runs beside a regular run that holds the lease, and never blocks it', async () => {
    // Prepare: an export whose lease a live regular run holds.
    const workflows = await h.workflows();
    const { id } = await createLocalExport(h, {
      prefixRoot: 'e2e-backfill/',
      startFromMs: endMs - HOUR_MS,
      datasets: ['email_events'],
      frequency: 'hourly',
    });
    const lease = await h.leases.claim({
      workspaceId: h.ws.workspaceId,
      destinationId: id,
      runId: 'run_regular',
      token: 'regular-token',
      startedAt: new Date().toISOString(),
      nowMs: Date.now(),
      durationMs: 5 * MINUTE_MS,
    });
    expect(lease).toBeDefined();
    const backfill = await newBackfill(id, {
      from: new Date(endMs - 2 * HOUR_MS).toISOString(),
      to: new Date(endMs).toISOString(),
    });

    // Act
    const outcome = await workflows.runExportRun(backfillInput(id));

    // Assess: the backfill ran to its end while the lease stayed with the regular run.
    expect(outcome.status).toBe('succeeded');
    expect((await backfillView(h, id, backfill.id)).status).toBe('succeeded');
    expect((await h.leases.get(h.ws.workspaceId, id))?.token).toBe('regular-token');
  });

  it('shows progress while it runs, and a cancel stops it before its next file', async () => {
    // Prepare: one writer at a time; after the first writer, progress is read and the backfill cancelled.
    const { id, prefix } = await createLocalExport(h, {
      prefixRoot: 'e2e-backfill/',
      startFromMs: endMs - HOUR_MS,
      datasets: ['email_events'],
      frequency: 'hourly',
    });
    const backfill = await newBackfill(id, {
      datasets: ['email_events'],
      from: new Date(endMs - 5 * HOUR_MS).toISOString(),
      to: new Date(endMs).toISOString(),
    });
    const seen: Json[] = [];
    const results: Json[] = [];
    let queue = Promise.resolve();
    const workflows = await h.workflows({
      intercept: (state, input, invoke) => {
        if (state !== 'WriteWindow') return invoke(input);
        const turn = queue.then(async () => {
          const output = (await invoke(input)) as Json;
          results.push(output);
          if (results.length === 1) {
            seen.push(await backfillView(h, id, backfill.id));
            const cancelled = await h.ws.client.delete<Json>(`/data-exports/${id}/backfills/${backfill.id}`);
            expect(cancelled.status).toBe(200);
          }
          return output as StateJson;
        });
        queue = turn.then(
          () => undefined,
          () => undefined,
        );
        return turn;
      },
    });

    // Act
    const outcome = await workflows.runExportRun(backfillInput(id));
    const after = await backfillView(h, id, backfill.id);
    const files = await exportFiles(h, prefix);

    // Assess: progress was visible mid-run; after the cancel no writer wrote a file.
    expect(seen[0]?.status).toBe('running');
    expect(seen[0]?.progress.email_events.files).toBe(1);
    expect(seen[0]?.progress.email_events.rows).toBeGreaterThan(0);
    expect(results.length).toBe(5);
    expect(results.slice(1).map((r) => [r.status, r.stopReason, r.files])).toEqual(
      Array.from({ length: 4 }, () => ['stopped', 'cancelled', 0]),
    );
    expect(files.size).toBe(1);
    expect(outcome.status).toBe('stopped');
    expect(after.status).toBe('cancelled');
    expect(after.progress.email_events.files).toBe(1);
    // The slot is free again: the next backfill of this export runs.
    const next = await newBackfill(id, {
      from: new Date(endMs - HOUR_MS).toISOString(),
      to: new Date(endMs).toISOString(),
    });
    expect((await (await h.workflows()).runExportRun(backfillInput(id))).status).toBe('succeeded');
    expect((await backfillView(h, id, next.id)).status).toBe('succeeded');
  });

  it('a full-history backfill exports from the earliest available time in chunks, resumable run after run', async () => {
    // Prepare: 500 more email events a day or more earlier (whole days only: the grid is daily).
    const ws = h.ws.workspaceId;
    await ingest([
      ...generateEvents({
        count: 500,
        workspaceId: ws,
        seed: 13,
        from: endMs - 30 * HOUR_MS,
        to: endMs - 26 * HOUR_MS,
        mix: { email_events: 1 },
      }),
    ]);
    const workflows = await h.workflows();
    const { id, prefix } = await createLocalExport(h, {
      prefixRoot: 'e2e-backfill/',
      startFromMs: endMs - HOUR_MS,
      datasets: ['email_events', 'custom_events'],
      frequency: 'daily',
    });
    const backfill = await newBackfill(id, { from: 'earliest' });

    // Act: runs until it is done (each run plans at most one 7-day chunk per dataset).
    const statuses: string[] = [];
    for (let run = 0; run < 10; run++) {
      const outcome = await workflows.runExportRun(backfillInput(id));
      statuses.push(outcome.status);
      if ((await backfillView(h, id, backfill.id)).status === 'succeeded') break;
    }
    const done = await backfillView(h, id, backfill.id);
    const stored = await new BackfillStore({ tableName: h.controlTable }).get(ws, id, backfill.id);
    const files = await exportFiles(h, prefix);

    // Assess: 35 days of daily windows in 5 or 6 chunks (one run each); every event through the range's
    // end exported, once.
    const range = stored!.range;
    const expected = (dataset: string) =>
      ingested.filter((e) => e.dataset === dataset && e.recorded > range.fromMs && e.recorded <= range.toMs)
        .length;
    expect(statuses.length).toBeGreaterThanOrEqual(5);
    expect(statuses.every((status) => status === 'succeeded')).toBe(true);
    expect(done.status).toBe('succeeded');
    expect(done.progress.email_events.windowsDone).toBe(done.progress.email_events.windowsTotal);
    expect(done.progress.email_events.windowsTotal).toBeGreaterThanOrEqual(34);
    expect(expected('email_events')).toBeGreaterThanOrEqual(500);
    expect(done.progress.email_events.rows).toBe(expected('email_events'));
    expect(done.progress.custom_events.rows).toBe(expected('custom_events'));
    const ids = new Set<string>();
    for (const bytes of files.values()) {
      for (const line of gunzipSync(bytes).toString('utf8').trimEnd().split('\n'))
        ids.add(JSON.parse(line).id);
    }
    expect(ids.size).toBe(expected('email_events') + expected('custom_events'));
  });
});
