import { gunzipSync } from 'node:zlib';
import { BackfillStore } from '@sluice/control';
import type { EventDataset } from '@sluice/core';
import { generateEvents } from '@sluice/eventlog';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Json as StateJson } from '@sluice/devstack';
import {
  backfillView,
  createLocalExport,
  type E2eHarness,
  expireFromEventLog,
  exportFiles,
  ingestAll,
  manualRunInput,
  startE2eHarness,
} from './harness.js';

/**
 * A full-history backfill of events that only the event archive holds. The events (7 days of them) are
 * first exported by the regular export while the hot log still has them; the scheduled compaction archives
 * them; DynamoDB's TTL is played by deleting them from the event log; then, with a hot log of 90 minutes
 * (the API's and the engine's), `"from": "earliest"` exports them again, from the archive, in 7-day chunks,
 * run after run: the same files, names and bytes, every row once.
 */

// biome-ignore lint/suspicious/noExplicitAny: response bodies, already checked against the OpenAPI by the client
type Json = Record<string, any>;

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
/** The hot log's retention once the archive holds the rows, in days (the variable's unit): 90 minutes. */
const HOT_RETENTION_DAYS = String((90 * MINUTE) / DAY);
/** The start of the current UTC day (of 10 minutes ago: a test just after midnight keeps its days). */
const TODAY = Math.floor((Date.now() - 10 * MINUTE) / DAY) * DAY;
/** The events: recorded over 7 days, from 8 days before today's UTC midnight to 1 day and 1 hour before it. */
const FROM = TODAY - 8 * DAY + MINUTE;
const TO = TODAY - DAY - HOUR;
/**
 * The retention the rows were ingested, exported and compacted under: a first compaction starts this far
 * back, at the hour of the first event (so the archive, and a full history, starts 8 days before today).
 */
const INGEST_RETENTION_DAYS = String((Date.now() - (FROM - MINUTE)) / DAY);
const DATASETS = ['email_events', 'custom_events'] as const;

let h: E2eHarness;
const recorded = new Map<string, { dataset: EventDataset; recordedMs: number }>();

beforeAll(async () => {
  // The API reads its retention when it starts: the hot log's short one, as after the archive took over.
  process.env.SLUICE_EVENT_RETENTION_DAYS = HOT_RETENTION_DAYS;
  h = await startE2eHarness();
  const events = [
    ...generateEvents({
      count: 1_600,
      workspaceId: h.ws.workspaceId,
      seed: 31,
      from: FROM,
      to: TO,
      mix: { email_events: 1 },
    }),
    ...generateEvents({
      count: 400,
      workspaceId: h.ws.workspaceId,
      seed: 32,
      from: FROM,
      to: TO,
      mix: { custom_events: 1 },
    }),
  ];
  for (const event of events as unknown as Record<string, unknown>[]) {
    recorded.set(String(event.id), {
      dataset: event.dataset as EventDataset,
      recordedMs: Date.parse(String(event.recorded_at)),
    });
  }
  expect(await ingestAll(h.events, h.ws.workspaceId, events as unknown as Record<string, unknown>[])).toBe(
    events.length,
  );
}, 300_000);

afterAll(async () => {
  delete process.env.SLUICE_EVENT_RETENTION_DAYS;
  expect(await h.close()).toEqual([]);
});

describe('a full-history backfill from the event archive', () => {
  it('exports events older than the hot log in 7-day chunks, run after run, in the regular export’s files', async () => {
    // Prepare: the regular export of the 8 days while the hot log holds them (its retention then: 10 days).
    process.env.SLUICE_EVENT_RETENTION_DAYS = INGEST_RETENTION_DAYS;
    const hotWorkflows = await h.workflows();
    const { id, prefix } = await createLocalExport(h, {
      prefixRoot: 'e2e-full-history/',
      startFromMs: FROM - MINUTE,
      datasets: [...DATASETS],
      frequency: 'daily',
    });
    for (let run = 0; run < 5; run++) {
      const outcome = await hotWorkflows.runExportRun(manualRunInput(h, id));
      expect(outcome.status).toBe('succeeded');
      if (!outcome.runAgain) break;
    }
    const regular = await exportFiles(h, prefix);
    expect(regular.size).toBe(14);
    await h.clear(prefix);
    // The scheduled compaction archives every hour the hot log holds, then the rows expire from it.
    const { localArchiveFunction } = await import('@sluice/local');
    const compact = localArchiveFunction({
      ...process.env,
      SLUICE_EVENT_RETENTION_DAYS: INGEST_RETENTION_DAYS,
    });
    expect(await compact({})).toMatchObject({ failures: 0, rows: recorded.size });
    const hours = new Map<string, { dataset: EventDataset; hourMs: number }>();
    for (const { dataset, recordedMs } of recorded.values()) {
      const hourMs = Math.floor(recordedMs / HOUR) * HOUR;
      hours.set(`${dataset}#${hourMs}`, { dataset, hourMs });
    }
    expect(await expireFromEventLog(h.ws.workspaceId, [...hours.values()])).toBe(recorded.size);
    // From here on the hot log keeps 90 minutes: every event is older, only the archive has it.
    process.env.SLUICE_EVENT_RETENTION_DAYS = HOT_RETENTION_DAYS;
    const created = await h.ws.client.post<Json>(`/data-exports/${id}/backfills`, { from: 'earliest' });
    expect(created.status).toBe(202);
    const backfillId = created.body.backfill.id as string;
    const { range } = (await new BackfillStore({ tableName: h.controlTable }).get(
      h.ws.workspaceId,
      id,
      backfillId,
    ))!;
    // Each writer at its turn; after each, the backfill as the API shows it. The first run's third email
    // writer fails once its window is written (a crash after the upload): the run after resumes the chunk.
    const spans: { run: number; dataset: string; fromMs: number; toMs: number }[] = [];
    const between: { run: number; progress: Json }[] = [];
    let run = 0;
    let queue = Promise.resolve();
    const workflows = await h.workflows({
      intercept: (state, input, invoke) => {
        if (state !== 'WriteWindow') return invoke(input);
        const item = (input as Json).item as Json;
        spans.push({ run, dataset: item.dataset, fromMs: item.fromMs, toMs: item.toMs });
        const crash =
          run === 0 && spans.filter((s) => s.run === 0 && s.dataset === 'email_events').length === 3;
        const turn = queue.then(async () => {
          const output = await invoke(input);
          between.push({ run, progress: (await backfillView(h, id, backfillId)).progress });
          if (crash)
            throw Object.assign(new Error('the writer crashed after its upload'), { name: 'BucketNotFound' });
          return output as StateJson;
        });
        queue = turn.then(
          () => undefined,
          () => undefined,
        );
        return turn;
      },
    });

    // Act: runs until the backfill is done; the API's view of it after each.
    const after: Json[] = [];
    const statuses: string[] = [];
    for (; run < 6; run++) {
      const outcome = await workflows.runExportRun({
        workspaceId: h.ws.workspaceId,
        destinationId: id,
        trigger: 'backfill',
      });
      statuses.push(outcome.status);
      after.push(await backfillView(h, id, backfillId));
      if (after.at(-1)?.status !== 'running') break;
    }
    const written = await exportFiles(h, prefix);

    // Assess: the range starts at the archive's start (the day of the first archived hour), before the events.
    expect(range.fromMs).toBe(TODAY - 8 * DAY - 1);
    expect(range.toMs).toBeGreaterThanOrEqual(TODAY - 1);
    const windowsTotal = Math.round((range.toMs - range.fromMs) / DAY);
    // Two chunks: the first run's failed writer left email's first chunk to the second run (custom moved on to
    // its second chunk), the third finished email. No span crosses a 7-day chunk boundary.
    expect(after.map((b) => [b.status, b.progress.email_events.windowsDone])).toEqual([
      ['running', 7],
      ['running', 7],
      ['succeeded', windowsTotal],
    ]);
    expect(statuses).toEqual(['succeeded', 'succeeded', 'succeeded']);
    expect(after[0]!.error).toMatch(/sluice-|bucket|crashed/i);
    for (const span of spans) {
      const chunk = Math.floor((span.fromMs - range.fromMs) / (7 * DAY));
      expect(span.toMs - range.fromMs, JSON.stringify(span)).toBeLessThanOrEqual((chunk + 1) * 7 * DAY);
      expect(chunk).toBe(span.dataset === 'email_events' ? Math.max(0, span.run - 1) : span.run);
    }
    // Progress moved while each run was going, window by window, not only at its end.
    const firstRun = between.filter((entry) => entry.run === 0);
    const done = (p: Json) => DATASETS.reduce((sum, dataset) => sum + p[dataset].windowsDone, 0);
    expect(firstRun.map((entry) => done(entry.progress))).toEqual(
      Array.from({ length: firstRun.length }, (_, index) => index + 1),
    );
    const rows = (p: Json) => DATASETS.reduce((sum, dataset) => sum + p[dataset].rows, 0);
    expect(rows(firstRun.at(-1)!.progress)).toBeGreaterThan(rows(firstRun[0]!.progress));
    for (const dataset of DATASETS) {
      const expected = [...recorded.values()].filter((e) => e.dataset === dataset).length;
      expect(after.at(-1)!.progress[dataset]).toEqual({
        windowsDone: windowsTotal,
        windowsTotal,
        rows: expected,
        files: 7,
        bytes: expect.any(Number),
      });
    }
    // The regular export's files, names and bytes; every row once, inside its window.
    expect([...written.keys()].sort()).toEqual([...regular.keys()].sort());
    for (const [key, bytes] of regular) expect(written.get(key)?.equals(bytes), key).toBe(true);
    const ids = new Set<string>();
    for (const [key, bytes] of written) {
      const [, fromMs, toMs] = /-(\d+)-(\d+)-\d{4}\.jsonl\.gz$/.exec(key)!.map(Number) as [
        number,
        number,
        number,
      ];
      for (const line of gunzipSync(bytes).toString('utf8').trimEnd().split('\n')) {
        const id = (JSON.parse(line) as { id: string }).id;
        expect(ids.has(id), id).toBe(false);
        ids.add(id);
        const event = recorded.get(id);
        expect(event).toBeDefined();
        expect(event!.recordedMs).toBeGreaterThan(fromMs);
        expect(event!.recordedMs).toBeLessThanOrEqual(toMs);
      }
    }
    expect(ids.size).toBe(recorded.size);
  }, 300_000);
});
