import { eventFileKey, gridStartOf, spanWindows, splitAtBoundaries, startOfUtcDay } from '@sluice/core';
import { generateEvents } from '@sluice/eventlog';
import { SecretSealer } from '@sluice/secrets';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Json as Payload, LocalWorkflows } from '@sluice/devstack';
import {
  createLocalExport,
  type E2eHarness,
  ingestAll,
  manualRunInput,
  startE2eHarness,
  uniqueId,
} from './harness.js';
import { kmsKey } from '../helpers/tables.js';

// biome-ignore lint/suspicious/noExplicitAny: response bodies, already checked against the OpenAPI by the client
type Json = Record<string, any>;

const MINUTE_MS = 60_000;
const HOUR_MS = 60 * MINUTE_MS;

let h: E2eHarness;
let workflows: LocalWorkflows;
// At least 65 minutes ago: the hour after it is then complete and older than the export lag.
const midnight = startOfUtcDay(Date.now() - HOUR_MS - 5 * MINUTE_MS);
/** Where the events begin: the first hourly window holds rows, so the first window written writes a file. */
const startFromMs = midnight - 2 * HOUR_MS;
/** The recorded times of the ingested events, by dataset. */
const recorded: Record<'email_events' | 'custom_events', number[]> = { email_events: [], custom_events: [] };

beforeAll(async () => {
  h = await startE2eHarness();
  workflows = await h.workflows();
  // 2,000 email events and 300 custom events on both sides of a UTC midnight.
  const ws = h.ws.workspaceId;
  const events = [
    ...generateEvents({
      count: 2_000,
      workspaceId: ws,
      seed: 7,
      from: midnight - 2 * HOUR_MS,
      to: midnight + 20 * MINUTE_MS,
      mix: { email_events: 1 },
    }),
    ...generateEvents({
      count: 300,
      workspaceId: ws,
      seed: 8,
      from: midnight - 2 * HOUR_MS,
      to: midnight + 20 * MINUTE_MS,
      mix: { custom_events: 1 },
    }),
  ];
  for (const event of events)
    recorded[event.dataset as keyof typeof recorded].push(Date.parse(event.recorded_at!));
  await ingestAll(h.events, ws, events as unknown as Record<string, unknown>[]);
}, 300_000);

afterAll(async () => {
  expect(await h.close()).toEqual([]);
});

/** A new export of the local bucket with its own prefix; returns its id and prefix. */
const createExport = () =>
  createLocalExport(h, {
    prefixRoot: 'e2e-failures/',
    startFromMs,
    datasets: ['email_events', 'custom_events'],
    frequency: 'hourly',
  });

const input = (destinationId: string) => manualRunInput(h, destinationId);

describe('export runs that fail, race or pause, through the synthesized state machines', () => {
  it('a permanent error (no such bucket) fails the run at once: no retry, a message, backed off', async () => {
    // Prepare: the bucket is gone (changed underneath the API, which would have refused it).
    const { id } = await createExport();
    const destination = await h.store.getDestination(h.ws.workspaceId, id);
    await h.store.updateDestination(h.ws.workspaceId, id, { bucket: 'sluice-no-such-bucket' } as never);
    expect(destination).toBeDefined();
    const writes: Payload[] = [];
    const runner = await h.workflows({
      intercept: async (state, payload, invoke) => {
        if (state === 'WriteWindow') writes.push(payload);
        return invoke(payload);
      },
    });
    const startedAt = Date.now();

    // Act
    const outcome = await runner.runExportRun(input(id));

    // Assess
    expect(outcome.status).toBe('failed');
    expect(outcome.error?.Error).toBe('BucketNotFound');
    const windows = new Set(writes.map((w) => JSON.stringify((w as Json).item)));
    expect(writes.length).toBe(windows.size); // every item tried once: permanent errors are not retried
    const view = (await h.ws.client.get<Json>(`/data-exports/${id}`)).body.dataExport;
    expect(view).toMatchObject({ status: 'failed', consecutiveFailures: 1 });
    expect(view.failing).toMatchObject({ reason: 'no_such_bucket' }); // the customer's to fix
    expect(view.lastError).toMatch(/sluice-no-such-bucket/);
    expect(view.lastError).not.toMatch(/[{}\n]|Error:|\bat .*:\d+:\d+/); // a sentence: no JSON, no stack
    expect(Date.parse(view.nextRunAt)).toBeGreaterThanOrEqual(startedAt + 15 * MINUTE_MS - 60_000);
    expect(view.exportedThrough).toEqual({ email_events: null, custom_events: null });
    const runs = (await h.ws.client.get<Json>(`/data-exports/${id}/runs`)).body.runs as Json[];
    expect(runs[0]).toMatchObject({ status: 'failed', rowCount: 0 });
    expect(runs[0]!.error).toBe(view.lastError);
    // The job history: each dataset failed, with no rows (its writers' time reported).
    for (const dataset of ['email_events', 'custom_events']) {
      expect(runs[0]!.stats[dataset]).toMatchObject({ status: 'failed', rows: 0, files: 0, bytes: 0 });
      expect(runs[0]!.stats[dataset].durationMs).toEqual(expect.any(Number));
    }
  });

  it('a wrong secret fails the run at once with a message about the secret (the local bucket checks signatures)', async () => {
    // Prepare: the secret is changed underneath the API (which would have refused it), sealed as the API seals.
    const { id } = await createExport();
    const wrong = uniqueId('wrongSecret');
    h.api.secrets.add(wrong);
    const sealed = await new SecretSealer(kmsKey).seal(wrong, {
      workspaceId: h.ws.workspaceId,
      destinationId: id,
    });
    await h.store.updateDestination(h.ws.workspaceId, id, { secret: sealed });
    const runner = await h.workflows();

    // Act
    const outcome = await runner.runExportRun(input(id));

    // Assess
    expect(outcome.status).toBe('failed');
    expect(outcome.error?.Error).toBe('BucketSignatureMismatch');
    const view = (await h.ws.client.get<Json>(`/data-exports/${id}`)).body.dataExport;
    expect(view).toMatchObject({ status: 'failed', consecutiveFailures: 1 });
    expect(view.lastError).toMatch(/the secret access key is wrong/);
    expect(view.lastError).not.toContain(wrong);
    expect(view.exportedThrough).toEqual({ email_events: null, custom_events: null });
  });

  it('two ExportRuns of one destination at once: one advances the cursor, the other is skipped', async () => {
    // Prepare
    const { id, prefix } = await createExport();

    // Act
    const outcomes = await Promise.all([
      workflows.runExportRun(input(id)),
      workflows.runExportRun(input(id)),
    ]);

    // Assess
    expect(outcomes.map((o) => o.status).sort()).toEqual(['skipped', 'succeeded']);
    expect(outcomes.find((o) => o.status === 'skipped')?.reason).toBe('lease_held');
    const view = (await h.ws.client.get<Json>(`/data-exports/${id}`)).body.dataExport;
    const throughMs = Date.parse(view.exportedThrough.email_events);
    const keys = (await h.list(prefix)).map((o) => o.key).filter((k) => k.endsWith('.jsonl.gz'));
    // Hour-long windows (toMs inclusive: an hour's window ends on its last millisecond, the next begins
    // after it; the hours include the midnight); one file each for the windows holding rows.
    const windows = splitAtBoundaries(gridStartOf(startFromMs, HOUR_MS), throughMs, HOUR_MS);
    const expected = (['email_events', 'custom_events'] as const).flatMap((dataset) =>
      windows
        .filter((w) => recorded[dataset].some((ms) => ms > w.fromMs && ms <= w.toMs))
        .map((w) => eventFileKey(prefix, dataset, w, 0)),
    );
    expect(expected).toHaveLength(6); // two hours before the midnight and one after it, for each dataset
    expect(keys).toEqual(expected.sort());
    const runs = (await h.ws.client.get<Json>(`/data-exports/${id}/runs`)).body.runs as Json[];
    expect(runs.filter((r) => r.status === 'succeeded')).toHaveLength(1);
    expect(view.totalRowsExported).toBe(2_300);
  });

  it('a pause in the middle of a run stops it before the next file, and the cursor waits', async () => {
    // Prepare: the first window is written; then the export is paused before the others begin.
    const { id, prefix } = await createExport();
    let release!: () => void;
    const paused = new Promise<void>((resolve) => {
      release = resolve;
    });
    let firstItem: Json | undefined;
    const runner = await h.workflows({
      intercept: async (state, payload, invoke) => {
        if (state !== 'WriteWindow') return invoke(payload);
        if (firstItem === undefined) {
          firstItem = (payload as Json).item as Json;
          const result = await invoke(payload);
          const patched = await h.ws.client.patch<Json>(`/data-exports/${id}`, { isEnabled: false });
          expect(patched.status).toBe(200);
          release();
          return result;
        }
        await paused;
        return invoke(payload);
      },
    });

    // Act
    const outcome = await runner.runExportRun(input(id));

    // Assess
    expect(outcome.status).toBe('stopped');
    const results = ((outcome.output as Json).results ?? []) as Json[];
    expect(results.filter((r) => r.status === 'written')).toHaveLength(1);
    expect(results.filter((r) => r.status === 'stopped').every((r) => r.stopReason === 'paused')).toBe(true);
    const keys = (await h.list(prefix)).map((o) => o.key).filter((k) => k.endsWith('.jsonl.gz'));
    // The first item is a span of hourly windows: one file for each of its windows holding rows.
    const dataset = firstItem!.dataset as 'email_events' | 'custom_events';
    const expected = spanWindows(firstItem as never)
      .filter((w) => recorded[dataset].some((ms) => ms > w.fromMs && ms <= w.toMs))
      .map((w) => eventFileKey(prefix, dataset, w, 0));
    expect(keys).toEqual(expected.sort());
    const view = (await h.ws.client.get<Json>(`/data-exports/${id}`)).body.dataExport;
    expect(view.isEnabled).toBe(false);
    expect(view.consecutiveFailures).toBe(0);
    // Only the written window may be behind a cursor; nothing beyond it.
    const through = view.exportedThrough as Record<string, string | null>;
    for (const [dataset, value] of Object.entries(through)) {
      if (dataset === firstItem!.dataset && firstItem!.fromMs === gridStartOf(startFromMs, HOUR_MS)) {
        expect(value === null || Date.parse(value) === firstItem!.toMs).toBe(true);
      } else {
        expect(value).toBeNull();
      }
    }
  });
});
