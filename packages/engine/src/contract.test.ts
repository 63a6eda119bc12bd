import { randomUUID } from 'node:crypto';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { cursorSk, documentClient, workspacePk, CursorStore } from '@sluice/control';
import {
  type Backfill,
  backfillRange,
  DAY_MS,
  type Destination,
  type EventDataset,
  type FileFormat,
  HOUR_MS,
  startOfUtcDay,
} from '@sluice/core';
import { EventLogWriter, generateEvents } from '@sluice/eventlog';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { controlTable, eventTables } from '../../../test/helpers/tables.js';
import { engineHarness } from './engine-harness.test-support.js';
import type { EngineDeps } from './deps.js';
import { listKeys, listManifestKeys, readBytes, readLines } from './local-bucket.test-support.js';
import type { RunTrigger } from './payloads.js';

/**
 * The engine's contract where features meet (docs/internals.md, "The export contract"), each case against the
 * local services: the production writer on s3rver, the stores on DynamoDB Local, on a given clock.
 */

const MINUTE_MS = 60_000;
const workspaceId = `ws_${randomUUID()}`;
/** A UTC midnight two days ago: the test data lies in the day after it. */
const DAY0 = startOfUtcDay(Date.now()) - 2 * DAY_MS;
/** Email events of the test, by recorded time. */
const EMAIL_FROM = DAY0;
const EMAIL_TO = DAY0 + 10 * HOUR_MS;
const EMAIL_ROWS = 600;
/** The clock of most runs: every hour of the data is complete and older than the lag. */
const NOW = DAY0 + 12 * HOUR_MS;
const RETENTION_MS = 35 * DAY_MS;
const recorded: number[] = [];

const harness = engineHarness({
  workspaceId,
  folder: 'contract-test',
  nowMs: NOW,
  eventRetentionMs: RETENTION_MS,
});
const { controlStore, backfills } = harness;

/** A destination of this suite (an access key on the local bucket), stored. */
function createDestination(
  options: { startFromMs?: number; datasets?: Destination['datasets']; fileFormat?: FileFormat } & Partial<
    Pick<Destination, 'frequency'>
  > = {},
): Promise<Destination> {
  return harness.createDestination({
    name: 'Contract test',
    startFrom: new Date(options.startFromMs ?? EMAIL_FROM - MINUTE_MS).toISOString(),
    datasets: options.datasets,
    frequency: options.frequency,
    fileFormat: options.fileFormat,
  });
}

/** One ExportRun in-process (claim, every writer, commit) at `nowMs`. */
function runOnce(
  destination: Pick<Destination, 'id'>,
  nowMs = NOW,
  overrides: Partial<EngineDeps> = {},
  trigger: RunTrigger = 'schedule',
) {
  return harness.runOnce(destination, { nowMs, overrides, trigger });
}

/** Runs until the export (or the backfill) has nothing left to do now, as Dispatch would. */
function runUntilDone(
  destination: Pick<Destination, 'id'>,
  nowMs = NOW,
  overrides: Partial<EngineDeps> = {},
  trigger: RunTrigger = 'schedule',
) {
  return harness.runUntilDone(destination, { nowMs, overrides, trigger });
}

/** Data keys below the destination's prefix, without it. */
async function dataKeys(destination: Destination): Promise<string[]> {
  return (await listKeys(destination.pathPrefix)).map((key) => key.slice(destination.pathPrefix.length + 1));
}

beforeAll(async () => {
  const writer = new EventLogWriter({ ...eventTables, explicitRecordedAt: 'unchecked' });
  const events = [
    ...generateEvents({
      count: EMAIL_ROWS,
      workspaceId,
      seed: 7,
      from: EMAIL_FROM,
      to: EMAIL_TO - 1,
      mix: { email_events: 1 },
    }),
  ] as unknown as Record<string, unknown>[];
  for (const event of events) recorded.push(Date.parse(String(event.recorded_at)));
  const result = await writer.ingestEvents(workspaceId, events);
  expect(result.invalid).toEqual([]);
}, 120_000);

afterAll(() => undefined);

describe('a window keeps the format it was first planned with', () => {
  it('a Parquet export whose runs run out of time writes every window as Parquet (defect 21.2)', async () => {
    // Prepare: a Parquet export with no run budget: each writer writes one file, then stops (partial)
    const destination = await createDestination({ fileFormat: { format: 'parquet', compression: 'snappy' } });

    // Act
    const runs = await runUntilDone(destination, NOW, {
      settings: { runBudgetMs: 0, eventRetentionMs: RETENTION_MS },
    });

    // Assess: several runs, each hourly window one Parquet file, every manifest Parquet
    expect(runs.length).toBeGreaterThan(1);
    const keys = await dataKeys(destination);
    expect(keys).toHaveLength(10);
    expect(keys.filter((key) => !key.endsWith('.parquet'))).toEqual([]);
    for (const key of await listManifestKeys(destination.pathPrefix)) {
      expect(JSON.parse((await readBytes(key)).toString()).format, key).toBe('parquet');
    }
  }, 120_000);

  it('keeps Parquet for the windows planned before a change to JSON lines, through partial runs', async () => {
    // Prepare: a Parquet export's first run plans every window and runs out of time; then JSON lines
    const destination = await createDestination({ fileFormat: { format: 'parquet', compression: 'snappy' } });
    const tight = { settings: { runBudgetMs: 0, eventRetentionMs: RETENTION_MS } };
    expect((await runOnce(destination, NOW, tight))?.committed.runAgain).toBe(true);
    await controlStore.updateDestination(
      workspaceId,
      destination.id,
      { format: 'jsonl', compression: 'gzip' },
      { bumpConfigVersion: false, now: new Date(NOW) },
    );

    // Act
    await runUntilDone(destination, NOW, tight);

    // Assess: every window was planned as Parquet, so every file is
    const keys = await dataKeys(destination);
    expect(keys).toHaveLength(10);
    expect(keys.filter((key) => !key.endsWith('.parquet'))).toEqual([]);
  }, 120_000);

  it('keeps Parquet for the windows planned before a change to JSON lines when the cursor later moves past expired rows', async () => {
    // Prepare: a Parquet export's first run plans every window and runs out of time (hours 6 and 8 are
    // written after a gap); then JSON lines; then no run until hours 0-4 left the event log
    const destination = await createDestination({ fileFormat: { format: 'parquet', compression: 'snappy' } });
    const tight = { settings: { runBudgetMs: 0, eventRetentionMs: RETENTION_MS } };
    expect((await runOnce(destination, NOW, tight))?.committed.runAgain).toBe(true);
    await controlStore.updateDestination(
      workspaceId,
      destination.id,
      { format: 'jsonl', compression: 'gzip' },
      { bumpConfigVersion: false, now: new Date(NOW) },
    );

    // Act: the cursor moves to 05:00 (the horizon)
    const later = DAY0 + RETENTION_MS + 5 * HOUR_MS + 5 * MINUTE_MS;
    await runUntilDone(destination, later);

    // Assess: every window after the horizon written, each in one format: the Parquet it was planned with
    const keys = await dataKeys(destination);
    const formats = new Map<string, Set<string>>();
    for (const key of keys) {
      const { fromMs, toMs } = windowOfKey(key);
      const window = `${fromMs}-${toMs}`;
      formats.set(
        window,
        (formats.get(window) ?? new Set()).add(key.endsWith('.parquet') ? 'parquet' : 'jsonl'),
      );
    }
    for (let hour = 5; hour < 10; hour++) {
      expect([
        ...(formats.get(`${DAY0 + hour * HOUR_MS - 1}-${DAY0 + (hour + 1) * HOUR_MS - 1}`) ?? []),
      ]).toEqual(['parquet']);
    }
    expect(keys.filter((key) => !key.endsWith('.parquet'))).toEqual([]);
    for (const key of await listManifestKeys(destination.pathPrefix)) {
      expect(JSON.parse((await readBytes(key)).toString()).format, key).toBe('parquet');
    }
  }, 120_000);

  it('reads a span stored without its format (by an older Commit) as the Parquet it was planned with', async () => {
    // Prepare: the cursor an older Commit left after a partial run: planned spans with no format
    const destination = await createDestination({ fileFormat: { format: 'parquet', compression: 'snappy' } });
    await documentClient.send(
      new PutCommand({
        TableName: controlTable.tableName,
        Item: {
          PK: workspacePk(workspaceId),
          SK: cursorSk(destination.id, 'email_events'),
          dataset: 'email_events',
          exportedThroughMs: DAY0 - 1,
          planned: [{ fromMs: DAY0 - 1, toMs: DAY0 + 4 * HOUR_MS - 1, stepMs: HOUR_MS, runId: 'run_old' }],
        },
      }),
    );

    // Act
    await runUntilDone(destination);

    // Assess
    const keys = await dataKeys(destination);
    expect(keys).toHaveLength(10);
    expect(keys.filter((key) => !key.endsWith('.parquet'))).toEqual([]);
  }, 120_000);
});

/** The recorded times of every row under the prefix (JSON lines), with the windows their files name. */
async function exportedRows(destination: Destination): Promise<{ recordedMs: number; key: string }[]> {
  const rows = [];
  for (const key of await listKeys(destination.pathPrefix)) {
    for (const line of await readLines(key)) {
      rows.push({ recordedMs: Date.parse(JSON.parse(line).recorded_at), key });
    }
  }
  return rows;
}

describe('an export starts exactly at its start', () => {
  it('exports no row recorded at or before startFrom, and the first file keeps the grid window name (defect 21.15)', async () => {
    // Prepare: a start that is the recorded time of a row inside an hourly window (that row is left out too)
    const sorted = [...recorded].sort((a, b) => a - b);
    const startFromMs = sorted[Math.floor(sorted.length / 3)] as number;
    const destination = await createDestination({ startFromMs });

    // Act
    await runUntilDone(destination);

    // Assess: exactly the rows after the start; the first file named for the whole grid window
    const rows = await exportedRows(destination);
    expect(rows.length).toBe(sorted.filter((ms) => ms > startFromMs).length);
    expect(rows.filter((row) => row.recordedMs <= startFromMs)).toEqual([]);
    const firstWindowFrom = Math.floor(startFromMs / HOUR_MS) * HOUR_MS - 1;
    expect(rows.map((row) => row.key).sort()[0]).toContain(
      `email_events-${firstWindowFrom}-${firstWindowFrom + HOUR_MS}-0000`,
    );
  }, 120_000);

  it('a dataset added (back) starts at the time it was added, inside a 5-minute window', async () => {
    // Prepare: an every_5_minutes export whose email_events were added 3 seconds after a row of theirs
    const sorted = [...recorded].sort((a, b) => a - b);
    const addedMs = (sorted[100] as number) + 3_000;
    const destination = await createDestination({ frequency: 'every_5_minutes' });
    await controlStore.updateDestination(
      workspaceId,
      destination.id,
      { datasetStartedAt: { email_events: new Date(addedMs).toISOString() } },
      { bumpConfigVersion: false, now: new Date(NOW), clearCursorsOf: ['email_events'] },
    );

    // Act
    await runUntilDone(destination);

    // Assess
    const rows = await exportedRows(destination);
    expect(rows.filter((row) => row.recordedMs <= addedMs)).toEqual([]);
    expect(rows.length).toBe(sorted.filter((ms) => ms > addedMs).length);
  }, 120_000);
});

/** The `(fromMs, toMs]` a file key names. */
function windowOfKey(key: string): { fromMs: number; toMs: number } {
  const [, fromMs, toMs] = (/-(\d+)-(\d+)-\d{4}\./.exec(key) ?? []).map(Number);
  return { fromMs: fromMs as number, toMs: toMs as number };
}

/** True when a window is one cell of the grid of `stepMs`. */
const isCell = (window: { fromMs: number; toMs: number }, stepMs: number) =>
  (window.fromMs + 1) % stepMs === 0 && window.toMs - window.fromMs === stepMs;

describe('a frequency change', () => {
  it('from hourly to daily finishes the day on the hourly grid, then writes daily cells: never an off-grid window (defect 22.11)', async () => {
    // Prepare: an hourly export up to date at 05:05, then daily
    const destination = await createDestination();
    await runUntilDone(destination, DAY0 + 5 * HOUR_MS + 5 * MINUTE_MS);
    await controlStore.updateDestination(
      workspaceId,
      destination.id,
      { frequency: 'daily' },
      { bumpConfigVersion: false, now: new Date(NOW) },
    );

    // Act: the day after, every hour of the first day is older than the lag
    await runUntilDone(destination, DAY0 + DAY_MS + 10 * MINUTE_MS);

    // Assess: every file is an hourly cell (the old grid, through midnight) or a daily cell, every row once
    const keys = await dataKeys(destination);
    const windows = keys.map(windowOfKey);
    expect(windows.filter((w) => !isCell(w, HOUR_MS) && !isCell(w, DAY_MS))).toEqual([]);
    expect(windows.filter((w) => isCell(w, HOUR_MS))).toHaveLength(10);
    expect((await exportedRows(destination)).length).toBe(EMAIL_ROWS);
    const cursor = (await new CursorStore(controlTable).get(workspaceId, destination.id)).get('email_events');
    expect(cursor?.exportedThroughMs).toBe(DAY0 + DAY_MS - 1);
  }, 120_000);
});

/** Stores a backfill as the API does: `[fromMs, toMs)` cut on the destination's grid, queued. */
async function createBackfill(
  destination: Destination,
  fromMs: number,
  toMs: number,
  nowMs: number,
  datasets: EventDataset[] = ['email_events'],
): Promise<string> {
  const iso = new Date(nowMs).toISOString();
  const stored = await controlStore.getDestination(workspaceId, destination.id);
  const backfill: Backfill = {
    id: `bf_${Math.floor(nowMs).toString(16).padStart(12, '0')}${randomUUID().replaceAll('-', '').slice(0, 12)}`,
    workspaceId,
    destinationId: destination.id,
    status: 'queued',
    fullHistory: false,
    datasets,
    from: new Date(fromMs).toISOString(),
    to: new Date(toMs).toISOString(),
    range: backfillRange(fromMs, toMs, stored?.frequency ?? destination.frequency, nowMs),
    doneThroughMs: {},
    reached: Object.fromEntries(datasets.map((dataset) => [dataset, {}])),
    progress: Object.fromEntries(datasets.map((dataset) => [dataset, { rows: 0, files: 0, bytes: 0 }])),
    attempts: 0,
    error: null,
    createdAt: iso,
    startedAt: null,
    finishedAt: null,
    updatedAt: iso,
  };
  expect(await backfills.create(backfill)).toBe('created');
  return backfill.id;
}

/** Every object under the prefix (data and manifests), with its bytes. */
async function snapshotOf(destination: Destination): Promise<Map<string, Buffer>> {
  const objects = new Map<string, Buffer>();
  for (const key of [
    ...(await listKeys(destination.pathPrefix)),
    ...(await listManifestKeys(destination.pathPrefix)),
  ]) {
    objects.set(key, await readBytes(key));
  }
  return objects;
}

describe('expired rows are reported', () => {
  it('to the retention horizon itself, not rounded down to the grid: a daily export behind by 35 days and 5 hours (defect 22.10)', async () => {
    // Prepare: a daily export from the day's midnight that never ran; 35 days and 5 hours after
    const destination = await createDestination({ frequency: 'daily', startFromMs: DAY0 });
    const later = DAY0 + RETENTION_MS + 5 * HOUR_MS;
    const reported: { fromMs: number; toMs: number }[] = [];
    const metrics = {
      recordRun: () => undefined,
      recordExpiredRows: (figures: { fromMs: number; toMs: number }) => reported.push(figures),
    };

    // Act
    const run = await runOnce(destination, later, { metrics });

    // Assess: the first 5 hours of the day reported; the day written with the rows left
    expect(reported).toEqual([expect.objectContaining({ fromMs: DAY0 - 1, toMs: DAY0 + 5 * HOUR_MS - 1 })]);
    const rows = await exportedRows(destination);
    expect(rows.length).toBe(recorded.filter((ms) => ms >= DAY0 + 5 * HOUR_MS).length);
    expect(run?.committed.status).toBe('succeeded');
  }, 120_000);
});

describe('totalRowsExported agrees with the bucket', () => {
  it('counts the windows a partial run completed after a gap when the cursor later moves past them as expired', async () => {
    // Prepare: no run budget, so each of the 8 spans writes its first hourly window and stops: hours 0-4
    // are committed, hours 6, 8 and 10 are complete after the gap of hour 5
    const destination = await createDestination();
    const tight = { settings: { runBudgetMs: 0, eventRetentionMs: RETENTION_MS } };
    const first = await runOnce(destination, NOW, tight);
    expect(first?.committed.runAgain).toBe(true);
    const rowsInBucket = async () => {
      let rows = 0;
      for (const key of await listKeys(destination.pathPrefix)) rows += (await readLines(key)).length;
      return rows;
    };
    const total = async () =>
      (await controlStore.getDestination(workspaceId, destination.id))?.totalRowsExported;
    expect(await total()).toBeLessThan(await rowsInBucket());

    // Act: the next runs come after hours 5-8 left the event log (the cursor moves past hours 6 and 8)
    const later = DAY0 + RETENTION_MS + 9 * HOUR_MS + 5 * MINUTE_MS;
    await runUntilDone(destination, later);

    // Assess: every row in the bucket counted once, hours 6 and 8 included
    const keys = await dataKeys(destination);
    expect(keys.filter((key) => key.includes(`-${DAY0 + 6 * HOUR_MS - 1}-`))).toHaveLength(1);
    expect(keys.filter((key) => key.includes(`-${DAY0 + 8 * HOUR_MS - 1}-`))).toHaveLength(1);
    expect(await total()).toBe(await rowsInBucket());
    await runUntilDone(destination, later + HOUR_MS);
    expect(await total()).toBe(await rowsInBucket());
  }, 120_000);
});

describe('a backfill rewrites a window as it was delivered', () => {
  it('never replaces a delivered file with fewer rows: a window that lost rows is skipped and reported (defects 21.1, 22.10)', async () => {
    // Prepare: a daily export delivers the first day whole
    const destination = await createDestination({ frequency: 'daily' });
    await runUntilDone(destination, DAY0 + DAY_MS + 10 * MINUTE_MS);
    const delivered = await snapshotOf(destination);
    expect(delivered.size).toBe(2);
    // 35 days and 5 hours later the rows of the day's first 5 hours have left the event log
    const later = DAY0 + RETENTION_MS + 5 * HOUR_MS;

    // Act: a backfill from the earliest available row through the end of that day
    const id = await createBackfill(destination, later - RETENTION_MS, DAY0 + DAY_MS, later);
    await runUntilDone(destination, later, {}, 'backfill');

    // Assess: the day's file and manifest as delivered; the backfill done, the lost window reported
    expect(await snapshotOf(destination)).toEqual(delivered);
    const backfill = await backfills.get(workspaceId, destination.id, id);
    expect(backfill?.status).toBe('succeeded');
    expect(backfill?.error).toMatch(/Not backfilled: rows recorded email_events from .* left the event log/);
  }, 120_000);

  it('in the format and on the grid it was first delivered with, across a format and a frequency change (defects 21.3, 22.11)', async () => {
    // Prepare: a Parquet hourly export delivers hours 0-5; then JSON lines, daily; the regular export
    // finishes the day on the hourly grid in JSON lines
    const destination = await createDestination({ fileFormat: { format: 'parquet', compression: 'snappy' } });
    await runUntilDone(destination, DAY0 + 5 * HOUR_MS + 5 * MINUTE_MS);
    await controlStore.updateDestination(
      workspaceId,
      destination.id,
      { frequency: 'daily', format: 'jsonl', compression: 'gzip' },
      { bumpConfigVersion: false, now: new Date(NOW) },
    );
    const nextDay = DAY0 + DAY_MS + 10 * MINUTE_MS;
    await runUntilDone(destination, nextDay);
    const delivered = await dataKeys(destination);
    expect(delivered.filter((key) => key.endsWith('.parquet'))).toHaveLength(5);
    expect(delivered.filter((key) => key.endsWith('.jsonl.gz'))).toHaveLength(5);
    const before = await snapshotOf(destination);

    // Act: a backfill of the whole day, cut on the daily grid the export has now
    const id = await createBackfill(destination, DAY0, DAY0 + DAY_MS, nextDay);
    await runUntilDone(destination, nextDay, {}, 'backfill');

    // Assess: the same names (no daily file, no second format), the JSON lines files the same bytes, every
    // manifest of the same format and rows
    expect((await backfills.get(workspaceId, destination.id, id))?.status).toBe('succeeded');
    expect(await dataKeys(destination)).toEqual(delivered);
    const after = await snapshotOf(destination);
    expect([...after.keys()]).toEqual([...before.keys()]);
    for (const [key, bytes] of before) {
      if (key.endsWith('.jsonl.gz')) expect(after.get(key)?.equals(bytes), key).toBe(true);
      if (key.includes('/_sluice/manifests/')) {
        const { format, files } = JSON.parse(bytes.toString());
        const again = JSON.parse((after.get(key) as Buffer).toString());
        expect([again.format, again.files.map((f: { rows: number }) => f.rows)], key).toEqual([
          format,
          files.map((f: { rows: number }) => f.rows),
        ]);
      }
    }
  }, 120_000);
});
