import { generateEvents } from '@sluice/eventlog';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createLocalExport,
  type E2eHarness,
  expireFromEventLog,
  ingestAll,
  manualRunInput,
  startE2eHarness,
} from './harness.js';

/**
 * Events older than the hot log's retention reach the customer's bucket through the event archive: the
 * local archive function (the compaction the scheduler runs) archives them, DynamoDB's TTL is played by
 * deleting them from the event log, and an export created afterwards, with a hot retention of 90 minutes,
 * writes every one of them exactly once.
 */

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
/** Four hours back: older than the 90-minute hot retention the export runs with. */
const H = Math.floor(Date.now() / HOUR) * HOUR - 4 * HOUR;
const COUNT = 800;
let h: E2eHarness;
let ids: string[] = [];
/** The export of the first case: its id, prefix, and files (key to bytes), for the backfill case. */
let regular: { id: string; prefix: string; files: Map<string, Buffer> } | undefined;

beforeAll(async () => {
  h = await startE2eHarness();
  const events = [
    ...generateEvents({
      count: COUNT,
      workspaceId: h.ws.workspaceId,
      seed: 21,
      from: H,
      to: H + 80 * MINUTE,
      mix: { email_events: 1 },
    }),
  ];
  ids = events.map((event) => event.id);
  expect(await ingestAll(h.events, h.ws.workspaceId, events as unknown as Record<string, unknown>[])).toBe(
    COUNT,
  );
}, 300_000);

afterAll(async () => {
  delete process.env.SLUICE_EVENT_RETENTION_DAYS;
  expect(await h.close()).toEqual([]);
});

describe('exports behind the hot log, through the event archive', () => {
  it('writes events older than the hot retention to the customer bucket exactly once', async () => {
    // Prepare: the scheduled compaction archives the settled hours (its hot log keeps 6 hours here)...
    const { localArchiveFunction } = await import('@sluice/local');
    const compact = localArchiveFunction({ ...process.env, SLUICE_EVENT_RETENTION_DAYS: String(6 / 24) });
    const summary = await compact({});
    expect(summary).toMatchObject({ failures: 0, rows: COUNT });
    // ...then the rows expire from the event log.
    const hours = [H, H + HOUR].map((hourMs) => ({ dataset: 'email_events' as const, hourMs }));
    expect(await expireFromEventLog(h.ws.workspaceId, hours)).toBe(COUNT);

    // Act: an export from H, with the engine's functions keeping a 90-minute hot log.
    process.env.SLUICE_EVENT_RETENTION_DAYS = String((90 * MINUTE) / DAY);
    const workflows = await h.workflows();
    const { id, prefix } = await createLocalExport(h, {
      prefixRoot: 'e2e-archive/',
      startFromMs: H,
      datasets: ['email_events'],
      frequency: 'hourly',
    });
    let outcome = await workflows.runExportRun(manualRunInput(h, id));
    for (let again = 0; outcome.runAgain && again < 5; again++) {
      outcome = await workflows.runExportRun(manualRunInput(h, id));
    }
    // A second run finds nothing more to write.
    const repeat = await workflows.runExportRun(manualRunInput(h, id));

    // Assess
    expect(outcome.status).toBe('succeeded');
    expect(repeat.status).toBe('succeeded');
    const objects = (await h.list(prefix)).filter((object) => object.key.endsWith('.jsonl.gz'));
    const written: string[] = [];
    for (const object of objects) {
      const lines = await h.readLines(object.key);
      written.push(...lines.map((line) => (JSON.parse(line) as { id: string }).id));
    }
    expect(written).toHaveLength(COUNT);
    expect(new Set(written)).toEqual(new Set(ids));
    expect(objects.map((object) => object.key.slice(prefix.length))).toEqual([
      `/email_events/date=${new Date(H).toISOString().slice(0, 10)}/email_events-${H - 1}-${H + HOUR - 1}-0000.jsonl.gz`,
      `/email_events/date=${new Date(H + HOUR).toISOString().slice(0, 10)}/email_events-${H + HOUR - 1}-${H + 2 * HOUR - 1}-0000.jsonl.gz`,
    ]);
    const view = await h.store.getDestination(h.ws.workspaceId, id);
    expect(view?.lastError ?? null).toBeNull();
    const files = new Map<string, Buffer>();
    for (const object of objects) files.set(object.key, await h.readBytes(object.key));
    regular = { id, prefix, files };
  }, 300_000);

  it('a range backfill of hours only the archive holds writes the same files as the regular export', async () => {
    // Prepare: the first case's export, its files put aside and removed from the bucket
    if (regular === undefined) throw new Error('the first case did not run');
    const { id, prefix, files } = regular;
    await h.clear(prefix);
    const workflows = await h.workflows();

    // Act: a backfill of the two archived hours, started by Dispatch
    const created = await h.ws.client.post<{ backfill: { id: string } }>(`/data-exports/${id}/backfills`, {
      datasets: ['email_events'],
      from: new Date(H).toISOString(),
      to: new Date(H + 2 * HOUR).toISOString(),
    });
    expect(created.status).toBe(202);
    const backfillId = created.body.backfill.id;
    let status = 'queued';
    for (let tick = 0; tick < 6 && (status === 'queued' || status === 'running'); tick++) {
      await workflows.runDispatch();
      const shown = await h.ws.client.get<{ backfill: { status: string } }>(
        `/data-exports/${id}/backfills/${backfillId}`,
      );
      status = shown.body.backfill.status;
    }

    // Assess: the rows came from the archive (the event log has none), in the same names and bytes
    expect(status).toBe('succeeded');
    const written = (await h.list(prefix)).filter((object) => object.key.endsWith('.jsonl.gz'));
    expect(written.map((object) => object.key).sort()).toEqual([...files.keys()].sort());
    for (const object of written) {
      expect((await h.readBytes(object.key)).equals(files.get(object.key) as Buffer), object.key).toBe(true);
    }
  }, 300_000);
});
