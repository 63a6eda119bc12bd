import { RunStateStore } from '@sluice/control';
import { generateEvents } from '@sluice/eventlog';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocalExport, type E2eHarness, ingestAll, startE2eHarness } from './harness.js';

// biome-ignore lint/suspicious/noExplicitAny: response bodies, already checked against the OpenAPI by the client
type Json = Record<string, any>;

const MINUTE_MS = 60_000;
const HOUR_MS = 60 * MINUTE_MS;

let h: E2eHarness;
let runState: RunStateStore;

beforeAll(async () => {
  h = await startE2eHarness();
  runState = new RunStateStore({ tableName: h.controlTable });
}, 300_000);

afterAll(async () => {
  expect(await h.close()).toEqual([]);
});

async function runsOf(id: string): Promise<Json[]> {
  const response = await h.ws.client.get<Json>(`/data-exports/${id}/runs?limit=100`);
  expect(response.status).toBe(200);
  return response.body.runs as Json[];
}

/** Makes the export's next scheduled slot `slotIso` (already due), as its last run would have set it. */
async function slotDue(id: string, slotIso: string): Promise<void> {
  expect(await runState.update(h.ws.workspaceId, id, { nextRunAt: slotIso }, new Date())).toBe(true);
}

describe('the job history on the local Dispatch state machine', () => {
  it('lists a scheduled slot with nothing to export as a succeeded run with no rows, once, without a workflow', async () => {
    // Prepare: an hourly export whose first (queued) run has run, then a slot due with nothing new.
    const workflows = await h.workflows();
    const { id } = await createLocalExport(h, {
      prefixRoot: 'e2e-history/',
      startFromMs: Date.now() - 10 * MINUTE_MS,
      datasets: ['email_events', 'custom_events'],
      frequency: 'hourly',
    });
    expect((await workflows.runDispatch()).started).toBe(1);
    const before = await runsOf(id);
    const slot = new Date(Math.floor(Date.now() / MINUTE_MS) * MINUTE_MS - 2 * MINUTE_MS).toISOString();
    await slotDue(id, slot);

    // Act: the slot's Dispatch; then the same slot due again (a second look at it), and another Dispatch.
    const first = await workflows.runDispatch();
    await slotDue(id, slot);
    const second = await workflows.runDispatch();
    const after = await runsOf(id);

    // Assess: no ExportRun started; exactly one new record, for the slot, succeeded with no rows.
    expect(first.started).toBe(0);
    expect(second.started).toBe(0);
    const added = after.filter((run) => !before.some((old) => old.id === run.id));
    expect(added).toHaveLength(1);
    expect(added[0]).toMatchObject({
      destinationId: id,
      status: 'succeeded',
      isManual: false,
      rowCount: 0,
      fileCount: 0,
      byteCount: 0,
      error: null,
      startedAt: slot,
      stats: {
        email_events: { status: 'succeeded', rows: 0, files: 0, bytes: 0, durationMs: 0 },
        custom_events: { status: 'succeeded', rows: 0, files: 0, bytes: 0, durationMs: 0 },
      },
    });
    expect(Date.parse(added[0]?.finishedAt)).toBeGreaterThanOrEqual(Date.parse(slot));
    // The export moved on to its next slot: the next tick records nothing more.
    expect((await workflows.runDispatch()).started).toBe(0);
    expect(await runsOf(id)).toHaveLength(after.length);
  });

  it('reports each dataset of a run that wrote files: status, rows, files, bytes and duration', async () => {
    // Prepare: 300 email events in the last whole hour, none of the other dataset.
    const workflows = await h.workflows();
    const endMs = Math.floor((Date.now() - 5 * MINUTE_MS) / HOUR_MS) * HOUR_MS;
    const events = [
      ...generateEvents({
        count: 300,
        workspaceId: h.ws.workspaceId,
        seed: 31,
        from: endMs - HOUR_MS + 1,
        to: endMs - 1,
        mix: { email_events: 1 },
      }),
    ] as unknown as Record<string, unknown>[];
    expect(await ingestAll(h.events, h.ws.workspaceId, events)).toBe(300);
    const { id } = await createLocalExport(h, {
      prefixRoot: 'e2e-history/',
      startFromMs: endMs - HOUR_MS,
      datasets: ['email_events', 'sms_events'],
      frequency: 'hourly',
    });

    // Act
    const outcome = await workflows.runDispatch();
    const [run] = await runsOf(id);

    // Assess: both datasets are in the run's stats; the one without rows reads as "No rows".
    expect(outcome.started).toBe(1);
    expect(run).toMatchObject({ status: 'succeeded', rowCount: 300, fileCount: 1 });
    expect(run?.stats.email_events).toMatchObject({ status: 'succeeded', rows: 300, files: 1 });
    expect(run?.stats.email_events.bytes).toBe(run?.byteCount);
    expect(run?.stats.email_events.durationMs).toEqual(expect.any(Number));
    expect(run?.stats.email_events.durationMs).toBeGreaterThanOrEqual(0);
    expect(run?.stats.sms_events).toMatchObject({ status: 'succeeded', rows: 0, files: 0, bytes: 0 });
    expect(run?.stats.sms_events.durationMs).toEqual(expect.any(Number));
  });
});
