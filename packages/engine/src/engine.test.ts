import { randomUUID } from 'node:crypto';
import { ControlStore, CursorStore, DueIndex, LeaseStore, RunStore } from '@sluice/control';
import {
  DAY_MS,
  type Destination,
  HOUR_MS,
  manifestKey,
  MAX_SPANS_PER_DATASET,
  nextSlotAfter,
  eventFileKey,
  type EventDataset,
  snapshotFileKey,
  snapshotSuccessKey,
  startOfUtcDay,
  utcDate,
  JSONL_GZIP,
} from '@sluice/core';
import { EventLogWriter, generateEvents, generateSubscribers } from '@sluice/eventlog';
import { AssumeRoleCommand, STSClient } from '@aws-sdk/client-sts';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commitRun } from './commit.js';
import { engineHarness } from './engine-harness.test-support.js';
import { type BucketWriterFactory, createBucketWriterFactory, type EngineDeps } from './deps.js';
import { findDueDestinations } from './dispatch.js';
import { TRANSIENT_ERROR_NAMES } from './errors.js';
import type { RunFigures } from './metrics.js';
import type { DueDestination, RunRef, WindowResult, WorkItem } from './payloads.js';
import { claimAndPlan } from './plan.js';
import { EXPIRED_RUN_MESSAGE } from './settle.js';
import {
  expectManifestMatchesBucket,
  listKeys,
  listManifestKeys,
  readBytes,
  readLines,
  runKeyOf,
} from './local-bucket.test-support.js';
import { writeWindow } from './write.js';
import { controlTable, eventTables, localBucketOrigins } from '../../../test/helpers/tables.js';
import { jsonLineAsRead, openParquetReader } from '../../../test/helpers/parquet.js';

/** The production writer, with the local s3rver allow-listed as the local runtime does. */
const localBucketWriterFactory = createBucketWriterFactory({ allowedEndpoints: localBucketOrigins });

const controlStore = new ControlStore(controlTable);
const cursorStore = new CursorStore(controlTable);
const leaseStore = new LeaseStore(controlTable);
const runStore = new RunStore(controlTable);
const figures: RunFigures[] = [];
/** Payload sizes measured by the tests, reported at the end. */
const payloadSizes: Record<string, number> = {};

/** The midnight the test data straddles: the start of the current UTC day. */
const MIDNIGHT = startOfUtcDay(Date.now());
/** One hour before it: the whole hourly window before the midnight holds more than 50,000 rows. */
const START = MIDNIGHT - HOUR_MS;
/** Exports are hourly here: at NOW the hour after the midnight is complete and older than the lag. */
const NOW = MIDNIGHT + HOUR_MS + 5 * 60_000;
/** The export limit at NOW: the end of the hour after the midnight. */
const LIMIT = MIDNIGHT + HOUR_MS - 1;
/** The hourly windows of the test data. */
const BEFORE = { fromMs: MIDNIGHT - HOUR_MS - 1, toMs: MIDNIGHT - 1 };
const AFTER = { fromMs: MIDNIGHT - 1, toMs: LIMIT };
const DAY_BEFORE = utcDate(MIDNIGHT - 1);
const DAY_AFTER = utcDate(MIDNIGHT);
const BEFORE_MIDNIGHT_ROWS = 51_000;
const AFTER_MIDNIGHT_ROWS = 500;
const SUBSCRIBERS = 25;
const workspaceId = `ws_${randomUUID()}`;

const harness = engineHarness({ workspaceId, folder: 'engine-test', nowMs: NOW });

/** The engine on the local services at NOW, its run figures recorded. */
function deps(overrides: Partial<EngineDeps> = {}): Partial<EngineDeps> {
  return harness.deps(NOW, {
    metrics: { recordRun: (f) => figures.push(f), recordExpiredRows: () => undefined },
    ...overrides,
  });
}

/** A destination of this suite, stored. */
async function createDestination(overrides: Partial<Destination> = {}): Promise<Destination> {
  return controlStore.createDestination(await destinationOf(overrides));
}

/** A destination of this suite (an access key on the local bucket, due now), not stored. */
function destinationOf(overrides: Partial<Destination> = {}): Promise<Destination> {
  return harness.destinationOf({
    name: 'Engine test',
    datasets: overrides.datasets ?? ['email_events', 'subscribers'],
    startFrom: new Date(START).toISOString(),
    stored: { nextRunAt: new Date(NOW - 60_000).toISOString(), ...overrides },
  });
}

/** The rows of a `.jsonl.gz` object. */
async function readRows(key: string): Promise<Record<string, unknown>[]> {
  return (await readLines(key)).map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** Runs the whole ExportRun in-process: claim, write every item, commit. */
async function runOnce(destination: Destination, overrides: Partial<EngineDeps> = {}) {
  const planned = await claimAndPlan(
    { workspaceId, destinationId: destination.id, trigger: 'schedule', executionId: randomUUID() },
    deps(overrides),
  );
  if (planned.outcome !== 'planned' || planned.run === undefined)
    throw new Error(`skipped: ${planned.reason}`);
  const run = planned.run;
  const results: WindowResult[] = [];
  for (const item of planned.items ?? []) results.push(await writeWindow({ run, item }, deps(overrides)));
  // In AWS the run's payload is JSON: an infinite deadline would not survive it, a number does.
  expect(Number.isFinite(run.deadlineMs)).toBe(true);
  const committed = await commitRun({ run, results }, deps(overrides));
  return { run, items: planned.items ?? [], results, committed };
}

/** Wraps lines so that reading fails after `count` of them (a connection that breaks mid-file). */
async function* breakAfter(
  lines: AsyncIterable<string> | Iterable<string>,
  count: number,
): AsyncGenerator<string> {
  let n = 0;
  for await (const line of lines) {
    if (n++ === count) throw new Error('socket hang up');
    yield line;
  }
}

beforeAll(async () => {
  // Prepare: 51,000 events recorded in the hour before a UTC midnight (one hourly window), 500 in the hour
  // after it.
  const writer = new EventLogWriter({ ...eventTables, explicitRecordedAt: 'unchecked' });
  const batches: { count: number; from: number; to: number; seed: number }[] = [
    { count: BEFORE_MIDNIGHT_ROWS, from: START, to: MIDNIGHT - 1, seed: 1 },
    { count: AFTER_MIDNIGHT_ROWS, from: MIDNIGHT - 1, to: MIDNIGHT + 50 * 60_000, seed: 2 },
  ];
  for (const batch of batches) {
    let chunk: unknown[] = [];
    for (const event of generateEvents({ ...batch, workspaceId, mix: { email_events: 1 } })) {
      chunk.push(event);
      if (chunk.length === 5_000) {
        const result = await writer.ingestEvents(workspaceId, chunk);
        expect(result.invalid).toEqual([]);
        chunk = [];
      }
    }
    if (chunk.length > 0) await writer.ingestEvents(workspaceId, chunk);
  }
  await writer.upsertSubscribers(workspaceId, [...generateSubscribers({ count: SUBSCRIBERS, workspaceId })]);
}, 300_000);

describe('an export run end to end on the local services', () => {
  it('writes 50,000-line files in recorded-time order, splits at midnight, snapshots subscribers and commits', async () => {
    // Prepare
    const destination = await createDestination();
    const prefix = destination.pathPrefix;
    // Act
    const { run, items, results, committed } = await runOnce(destination);
    // Assess: the plan
    expect(items).toEqual<WorkItem[]>([
      // The start is the first instant of the first window: a row recorded exactly then is left out.
      {
        dataset: 'email_events',
        kind: 'events',
        ...BEFORE,
        stepMs: HOUR_MS,
        format: JSONL_GZIP,
        startMs: START,
        // A new export: the first item of each dataset writes its schema beside the data.
        schema: true,
      },
      { dataset: 'email_events', kind: 'events', ...AFTER, stepMs: HOUR_MS, format: JSONL_GZIP },
      { dataset: 'subscribers', kind: 'snapshot', date: DAY_AFTER, format: JSONL_GZIP, schema: true },
    ]);
    expect(committed).toEqual({ status: 'succeeded', runAgain: false });
    // Assess: the files
    const before = BEFORE;
    const after = AFTER;
    const expectedKeys = [
      eventFileKey(prefix, 'email_events', before, 0),
      eventFileKey(prefix, 'email_events', before, 1),
      eventFileKey(prefix, 'email_events', after, 0),
      snapshotFileKey(prefix, DAY_AFTER, 0),
      snapshotSuccessKey(prefix, DAY_AFTER),
    ].sort();
    expect(await listKeys(prefix)).toEqual(expectedKeys);
    expect(expectedKeys[0]).toContain(`/email_events/date=${DAY_BEFORE}/`);
    // Assess: a manifest per window with rows, and the snapshot's in `_SUCCESS`, each matching the bucket
    expect(await listManifestKeys(prefix)).toEqual(
      [manifestKey(prefix, 'email_events', before), manifestKey(prefix, 'email_events', after)].sort(),
    );
    expect(manifestKey(prefix, 'email_events', before)).toBe(
      `${prefix}/_sluice/manifests/email_events/date=${DAY_BEFORE}/${before.fromMs}-${before.toMs}.json`,
    );
    const beforeManifest = await expectManifestMatchesBucket(manifestKey(prefix, 'email_events', before), [
      eventFileKey(prefix, 'email_events', before, 0),
      eventFileKey(prefix, 'email_events', before, 1),
    ]);
    expect(beforeManifest).toMatchObject({
      dataset: 'email_events',
      window: { date: DAY_BEFORE, from_ms: before.fromMs, to_ms: before.toMs },
      rows: BEFORE_MIDNIGHT_ROWS,
    });
    await expectManifestMatchesBucket(manifestKey(prefix, 'email_events', after), [
      eventFileKey(prefix, 'email_events', after, 0),
    ]);
    const snapshotManifest = await expectManifestMatchesBucket(snapshotSuccessKey(prefix, DAY_AFTER), [
      snapshotFileKey(prefix, DAY_AFTER, 0),
    ]);
    expect(snapshotManifest).toMatchObject({
      dataset: 'subscribers',
      window: { date: DAY_AFTER },
      rows: SUBSCRIBERS,
    });
    const file0 = await readRows(eventFileKey(prefix, 'email_events', before, 0));
    const file1 = await readRows(eventFileKey(prefix, 'email_events', before, 1));
    const file2 = await readRows(eventFileKey(prefix, 'email_events', after, 0));
    expect([file0.length, file1.length, file2.length]).toEqual([50_000, 1_000, AFTER_MIDNIGHT_ROWS]);
    const all = [...file0, ...file1, ...file2];
    const recorded = all.map((row) => Date.parse(row.recorded_at as string));
    expect(recorded.every((ms, i) => i === 0 || ms >= (recorded[i - 1] as number))).toBe(true);
    expect([...file0, ...file1].every((row) => (row.recorded_at as string).startsWith(DAY_BEFORE))).toBe(
      true,
    );
    expect(file2.every((row) => (row.recorded_at as string).startsWith(DAY_AFTER))).toBe(true);
    expect(new Set(all.map((row) => row.id)).size).toBe(all.length);
    expect(all.every((row) => row.schema_version === 1)).toBe(true);
    const subscribers = await readRows(snapshotFileKey(prefix, DAY_AFTER, 0));
    expect(subscribers).toHaveLength(SUBSCRIBERS);
    expect(subscribers.every((row) => row.snapshot_date === DAY_AFTER && typeof row.email === 'string')).toBe(
      true,
    );
    expect(Object.keys(subscribers[0] as object)[0]).toBe('snapshot_date');
    // Assess: cursors, run record, destination, metrics
    const cursors = await cursorStore.get(workspaceId, destination.id);
    expect(cursors.get('email_events')).toMatchObject({ exportedThroughMs: LIMIT, plannedSpans: [] });
    expect(await cursorStore.getProgress(workspaceId, destination.id)).toEqual(new Map());
    expect(cursors.get('subscribers')).toMatchObject({ snapshotDate: DAY_AFTER });
    expect(cursors.get('subscribers')?.plannedSnapshot).toBeUndefined();
    const rows = BEFORE_MIDNIGHT_ROWS + AFTER_MIDNIGHT_ROWS;
    const record = await runStore.get(runKeyOf(run));
    expect(record).toMatchObject({
      status: 'succeeded',
      rowCount: rows + SUBSCRIBERS,
      fileCount: 4,
      error: null,
      stats: {
        email_events: { rows, files: 3, fromMs: BEFORE.fromMs, toMs: LIMIT },
        subscribers: { rows: SUBSCRIBERS, files: 1, snapshotDate: DAY_AFTER },
      },
    });
    expect(record?.byteCount).toBe(results.reduce((sum, r) => sum + r.bytes, 0));
    const view = await controlStore.getDestination(workspaceId, destination.id);
    expect(view).toMatchObject({
      status: 'idle',
      totalRowsExported: rows + SUBSCRIBERS,
      consecutiveFailures: 0,
      lastRunAt: run.startedAt,
      lastSuccessAt: new Date(NOW).toISOString(),
      // Its own next slot (Dispatch's rule too), not the top of the hour.
      nextRunAt: new Date(nextSlotAfter(NOW, 'hourly', destination.id)).toISOString(),
      exportedThrough: { email_events: new Date(LIMIT).toISOString(), subscribers: DAY_AFTER },
    });
    expect(figures.find((f) => f.destinationId === destination.id)?.lagSecondsByDataset).toEqual({
      email_events: Math.round((NOW - LIMIT) / 1000),
    });
    expect(await leaseStore.get(workspaceId, destination.id)).toBeUndefined();
  }, 180_000);

  it('a writer failing in its second file: nothing half-written, the other windows committed, the retry continues with the same names', async () => {
    // Prepare: a bucket connection that breaks 500 lines into the second file of the window before midnight.
    const destination = await createDestination({ datasets: ['email_events'] });
    const prefix = destination.pathPrefix;
    let files = 0;
    const failing: BucketWriterFactory = (location, credentials) => {
      const real = localBucketWriterFactory(location, credentials);
      return {
        ...real,
        writeFile: (key, lines, options) =>
          ++files === 2
            ? real.writeFile(key, breakAfter(lines, 500), options)
            : real.writeFile(key, lines, options),
      };
    };
    const planned = await claimAndPlan(
      { workspaceId, destinationId: destination.id, trigger: 'manual', executionId: randomUUID() },
      deps(),
    );
    const run = planned.run as RunRef;
    const [first, second] = planned.items as [WorkItem, WorkItem];
    // Act 1: the first span fails in its second file (its Map item's Catch makes that its result); the
    // second span is written; Commit commits what it can and records the failure.
    const error = await writeWindow({ run, item: first }, deps({ bucketWriterFactory: failing })).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(TRANSIENT_ERROR_NAMES).toContain(error?.name);
    const written = await writeWindow({ run, item: second }, deps());
    const committed = await commitRun(
      {
        run,
        results: [
          {
            status: 'failed',
            item: first,
            error: {
              Error: error?.name,
              Cause: JSON.stringify({
                errorType: error?.name,
                errorMessage: error?.message,
                trace: ['at x'],
              }),
            },
          },
          written,
        ],
      },
      deps(),
    );
    // Assess 1: file 0 of the first window and the second window's file are there, nothing else
    expect(committed).toEqual({ status: 'failed', runAgain: false });
    expect(await listKeys(prefix)).toEqual(
      [
        eventFileKey(prefix, 'email_events', BEFORE, 0),
        eventFileKey(prefix, 'email_events', AFTER, 0),
      ].sort(),
    );
    // The failed window has no manifest yet: a loader does not read it.
    expect(await listManifestKeys(prefix)).toEqual([manifestKey(prefix, 'email_events', AFTER)]);
    const firstBytes = await readBytes(eventFileKey(prefix, 'email_events', BEFORE, 0));
    let cursor = (await cursorStore.get(workspaceId, destination.id)).get('email_events');
    expect(cursor?.exportedThroughMs).toBeUndefined();
    const progress = await cursorStore.getProgress(workspaceId, destination.id);
    expect(progress.get(`email_events#${BEFORE.fromMs}-${BEFORE.toMs}`)).toMatchObject({
      nextFile: 1,
      done: false,
    });
    expect(progress.get(`email_events#${AFTER.fromMs}-${AFTER.toMs}`)).toMatchObject({
      nextFile: 1,
      done: true,
    });
    const failed = await controlStore.getDestination(workspaceId, destination.id);
    expect(failed).toMatchObject({ status: 'failed', consecutiveFailures: 1 });
    expect(failed?.lastError).not.toContain('at x');
    expect(failed?.nextRunAt).toBe(new Date(NOW + HOUR_MS).toISOString());
    expect(await leaseStore.get(workspaceId, destination.id)).toBeUndefined();
    const failedRecord = await runStore.get(runKeyOf(run));
    expect(failedRecord).toMatchObject({ status: 'failed', error: failed?.lastError, isManual: true });
    // A run counts the windows it commits: none yet (the window after midnight waits for the one before it).
    expect(failedRecord?.rowCount).toBe(0);

    // Act 2: the retry, later, with a healthy bucket
    const later = NOW + 20 * 60_000;
    const retry = await runOnce(destination, { now: () => new Date(later) });
    // Assess 2: the same spans; the first window continues at file 1, file 0 untouched; the second is not rewritten
    expect(retry.items).toEqual(planned.items);
    expect(retry.results.map((r) => r.files)).toEqual([1, 0]);
    expect(await readBytes(eventFileKey(prefix, 'email_events', BEFORE, 0))).toEqual(firstBytes);
    expect((await readRows(eventFileKey(prefix, 'email_events', BEFORE, 1))).length).toBe(1_000);
    // The resumed window's manifest lists the file of the failed run too
    await expectManifestMatchesBucket(manifestKey(prefix, 'email_events', BEFORE), [
      eventFileKey(prefix, 'email_events', BEFORE, 0),
      eventFileKey(prefix, 'email_events', BEFORE, 1),
    ]);
    cursor = (await cursorStore.get(workspaceId, destination.id)).get('email_events');
    expect(cursor?.exportedThroughMs).toBe(LIMIT);
    const healed = await controlStore.getDestination(workspaceId, destination.id);
    expect(healed).toMatchObject({ status: 'idle', consecutiveFailures: 0, lastError: null });
    expect(healed?.totalRowsExported).toBe(BEFORE_MIDNIGHT_ROWS + AFTER_MIDNIGHT_ROWS);
  }, 180_000);

  it('writes a Parquet destination in the same windows, numbers and rows as JSON lines, named .parquet', async () => {
    // Prepare: the same data exported as JSON lines and as Parquet (zstd)
    const jsonl = await createDestination();
    const parquet = await createDestination({ format: 'parquet', compression: 'zstd' });
    const zstd = { format: 'parquet', compression: 'zstd' } as const;
    // Act
    await runOnce(jsonl);
    const { items, committed } = await runOnce(parquet);
    // Assess: the plan carries the format, and the files are those of JSON lines with another extension
    expect(committed).toEqual({ status: 'succeeded', runAgain: false });
    expect(items.map((item) => item.format)).toEqual([zstd, zstd, zstd]);
    const files = [
      { window: BEFORE, index: 0 },
      { window: BEFORE, index: 1 },
      { window: AFTER, index: 0 },
    ];
    expect(await listKeys(parquet.pathPrefix)).toEqual(
      [
        ...files.map(({ window, index }) =>
          eventFileKey(parquet.pathPrefix, 'email_events', window, index, zstd),
        ),
        snapshotFileKey(parquet.pathPrefix, DAY_AFTER, 0, zstd),
        snapshotSuccessKey(parquet.pathPrefix, DAY_AFTER),
      ].sort(),
    );
    expect(eventFileKey(parquet.pathPrefix, 'email_events', BEFORE, 0, zstd)).toMatch(/-0000\.parquet$/);
    // Assess: each Parquet file holds exactly the rows of the same JSON lines file, in order
    const reader = await openParquetReader();
    try {
      const pairs = [
        ...files.map(({ window, index }) => ({
          dataset: 'email_events' as const,
          jsonKey: eventFileKey(jsonl.pathPrefix, 'email_events', window, index),
          parquetKey: eventFileKey(parquet.pathPrefix, 'email_events', window, index, zstd),
        })),
        {
          dataset: 'subscribers' as const,
          jsonKey: snapshotFileKey(jsonl.pathPrefix, DAY_AFTER, 0),
          parquetKey: snapshotFileKey(parquet.pathPrefix, DAY_AFTER, 0, zstd),
        },
      ];
      for (const { dataset, jsonKey, parquetKey } of pairs) {
        const lines = await readLines(jsonKey);
        const path = await reader.put(parquetKey, await readBytes(parquetKey));
        expect(lines.length).toBeGreaterThan(0);
        expect(await reader.rows(path, dataset)).toEqual(lines.map((line) => jsonLineAsRead(line, dataset)));
      }
    } finally {
      await reader.close();
    }
  }, 300_000);

  it('writes a role destination with the keys STS returns: one AssumeRole per window, no secret opened', async () => {
    // Prepare: a role destination (its bucket served by the local one) and STS answering with the local key
    const sts = mockClient(STSClient);
    sts.on(AssumeRoleCommand).resolves({
      Credentials: {
        AccessKeyId: 'S3RVER',
        SecretAccessKey: 'S3RVER',
        SessionToken: 'engine-session-token',
        Expiration: new Date(Date.now() + HOUR_MS),
      },
    });
    const { accessKeyId: _id, secret: _secret, ...keyed } = await destinationOf();
    const role = { roleArn: 'arn:aws:iam::111122223333:role/sluice', externalId: 'sluice-engine-test' };
    const destination = await controlStore.createDestination({ ...keyed, role });
    const noSecrets = { open: async () => Promise.reject(new Error('a role destination has no secret')) };
    try {
      // Act
      const { items, committed } = await runOnce(destination, { sealer: noSecrets });
      // Assess: the same files as a key destination, each window's client assuming the role once
      expect(committed).toEqual({ status: 'succeeded', runAgain: false });
      expect(await listKeys(destination.pathPrefix)).toHaveLength(5);
      const calls = sts.commandCalls(AssumeRoleCommand).map((call) => call.args[0].input);
      expect(calls).toHaveLength(items.length);
      for (const input of calls) {
        expect(input).toMatchObject({
          RoleArn: role.roleArn,
          ExternalId: role.externalId,
          RoleSessionName: `sluice-${destination.id}`,
        });
      }
    } finally {
      sts.restore();
    }
  });

  it('lets only one of two concurrent runs claim, and a run that lost its lease moves no cursor', async () => {
    // Prepare
    const destination = await createDestination({ datasets: ['custom_events'] });
    const claim = (now: number) =>
      claimAndPlan(
        { workspaceId, destinationId: destination.id, trigger: 'schedule', executionId: randomUUID() },
        deps({ now: () => new Date(now) }),
      );
    // Act 1: two at once
    const both = await Promise.all([claim(NOW), claim(NOW)]);
    // Assess 1
    expect(both.map((r) => r.outcome).sort()).toEqual(['planned', 'skipped']);
    expect(both.find((r) => r.outcome === 'skipped')?.reason).toBe('lease_held');
    const stale = both.find((r) => r.outcome === 'planned')?.run as RunRef;
    // Act 2: the first run stalls past its lease; a second run takes over and commits; then the first commits
    // (the first run's lease expired: the takeover settles it as failed before claiming)
    const takeover = await claim(NOW + 10 * 60_000);
    expect(takeover.outcome).toBe('planned');
    const fresh = takeover.run as RunRef;
    const empty = (run: RunRef, items: WorkItem[] | undefined) =>
      Promise.all((items ?? []).map((item) => writeWindow({ run, item }, deps())));
    const freshResults = await empty(fresh, takeover.items);
    expect(freshResults.every((r) => r.status === 'written' && r.files === 0)).toBe(true);
    const staleCommit = await commitRun(
      {
        run: stale,
        results: [
          {
            dataset: 'custom_events',
            kind: 'events',
            fromMs: BEFORE.fromMs,
            toMs: LIMIT,
            doneThroughMs: LIMIT,
            status: 'written',
            rows: 0,
            files: 0,
            bytes: 0,
          },
        ],
      },
      deps(),
    );
    const freshCommit = await commitRun(
      { run: fresh, results: freshResults },
      deps({ now: () => new Date(NOW + 10 * 60_000) }),
    );
    // Assess 2
    expect(staleCommit).toEqual({ status: 'failed', runAgain: false });
    expect(freshCommit.status).toBe('succeeded');
    const cursor = (await cursorStore.get(workspaceId, destination.id)).get('custom_events');
    expect(cursor?.exportedThroughMs).toBe(LIMIT);
    const staleRecord = await runStore.get(runKeyOf(stale));
    expect(staleRecord).toMatchObject({ status: 'failed', error: EXPIRED_RUN_MESSAGE });
    // A late duplicate of the fresh run's Commit changes nothing.
    const freshRecord = await runStore.get(runKeyOf(fresh));
    expect(await commitRun({ run: fresh, results: [] }, deps())).toEqual({
      status: 'succeeded',
      runAgain: false,
    });
    expect(await runStore.get(runKeyOf(fresh))).toEqual(freshRecord);
  }, 60_000);

  it('stops before the next file when the export is paused mid-window, without counting a failure', async () => {
    // Prepare: pause the destination as soon as the first file is written.
    const destination = await createDestination({ datasets: ['email_events'] });
    const pausing: BucketWriterFactory = (location, credentials) => {
      const real = localBucketWriterFactory(location, credentials);
      return {
        ...real,
        writeFile: async (key, lines, options) => {
          const file = await real.writeFile(key, lines, options);
          await controlStore.updateDestination(workspaceId, destination.id, { isEnabled: false });
          return file;
        },
      };
    };
    // Act
    const { run, results, committed } = await runOnce(destination, { bucketWriterFactory: pausing });
    // Assess
    expect(results[0]).toMatchObject({ status: 'stopped', stopReason: 'paused', files: 1, rows: 50_000 });
    expect(results[1]).toMatchObject({ status: 'stopped', stopReason: 'paused', files: 0 });
    expect(committed).toEqual({ status: 'stopped', runAgain: false });
    expect(await listKeys(destination.pathPrefix)).toHaveLength(1);
    const cursor = (await cursorStore.get(workspaceId, destination.id)).get('email_events');
    expect(cursor?.exportedThroughMs).toBeUndefined();
    expect(cursor?.plannedSpans).toHaveLength(2);
    const view = await controlStore.getDestination(workspaceId, destination.id);
    expect(view).toMatchObject({ status: 'idle', consecutiveFailures: 0, isEnabled: false, lastError: null });
    const record = await runStore.get(runKeyOf(run));
    expect(record?.status).toBe('succeeded');
    expect(record?.error).toMatch(/paused/);
  }, 120_000);
});

describe('catching up a destination far behind', () => {
  it('plans whole hourly grid windows in at most MAX_SPANS_PER_DATASET spans a dataset, and keeps the ExportRun payload small', async () => {
    // Prepare: an hourly export of three event datasets and the snapshot, started three days ago.
    const startFrom = new Date(MIDNIGHT - 3 * DAY_MS).toISOString();
    const datasets = ['email_events', 'sms_events', 'custom_events', 'subscribers'] as const;
    const destination = await createDestination({
      datasets: [...datasets],
      startFrom,
      datasetStartedAt: Object.fromEntries(datasets.map((d) => [d, startFrom])),
    });
    const events = ['email_events', 'sms_events', 'custom_events'] as const;
    // Act: one run, writing every item for real, with the state of the execution as Step Functions holds
    // it after the Map (execution input, `$.plan`, `$.results`, `$.commit`).
    const input = { workspaceId, destinationId: destination.id, trigger: 'schedule' as const };
    const first = await runOnce(destination);
    const state = {
      ...input,
      plan: { outcome: 'planned', run: first.run, items: first.items },
      results: first.results,
      commit: first.committed,
    };
    // Assess: 73 hourly windows per event dataset from the start, in 8 spans, and the snapshot
    for (const dataset of events) {
      const spans = first.items.filter((item) => item.dataset === dataset);
      expect(spans).toHaveLength(MAX_SPANS_PER_DATASET);
      let end = MIDNIGHT - 3 * DAY_MS - 1;
      for (const span of spans) {
        if (span.kind !== 'events') throw new Error('not an event span');
        expect(span).toMatchObject({ fromMs: end, stepMs: HOUR_MS });
        expect((span.toMs + 1) % HOUR_MS).toBe(0);
        end = span.toMs;
      }
      expect(end).toBe(LIMIT);
    }
    expect(first.items.filter((item) => item.kind === 'snapshot')).toHaveLength(1);
    expect(first.results.every((result) => result.status === 'written')).toBe(true);
    expect(first.committed).toEqual({ status: 'succeeded', runAgain: false });
    const payloadBytes = Buffer.byteLength(JSON.stringify(state));
    payloadSizes.atCap = payloadBytes;
    expect(payloadBytes).toBeLessThan(32 * 1024); // Step Functions allows 256 KB
    const cursors = await cursorStore.get(workspaceId, destination.id);
    for (const dataset of events) expect(cursors.get(dataset)?.exportedThroughMs).toBe(LIMIT);
    const emailKeys = (await listKeys(destination.pathPrefix)).filter((key) =>
      key.includes('/email_events/'),
    );
    expect(emailKeys).toEqual([
      eventFileKey(destination.pathPrefix, 'email_events', BEFORE, 0),
      eventFileKey(destination.pathPrefix, 'email_events', BEFORE, 1),
      eventFileKey(destination.pathPrefix, 'email_events', AFTER, 0),
    ]);
  }, 300_000);

  it('a run budget too small for the window: writers stop after each file, runs continue, and the files are the bytes of one pass', async () => {
    // Prepare: two exports of the same rows, one with the default budget, one with none at all (each
    // writer invocation then writes one file and returns where to continue).
    const whole = await createDestination({ datasets: ['email_events'] });
    const pieces = await createDestination({ datasets: ['email_events'] });
    await runOnce(whole);
    const tight = { settings: { runBudgetMs: 0, eventRetentionMs: 35 * DAY_MS } };
    // Act: run until the export is up to date, as dispatch would (a run that ran out of time runs again)
    const runs: Awaited<ReturnType<typeof runOnce>>[] = [];
    for (let i = 0; i < 6; i++) {
      const run = await runOnce(pieces, tight);
      runs.push(run);
      if (!run.committed.runAgain) break;
    }
    // Assess: two runs (file 0 of the window before midnight and the window after it, then file 1; the
    // complete window is not written again), identical files
    expect(runs.map((run) => run.results.map((result) => [result.status, result.files]))).toEqual([
      [
        ['partial', 1],
        ['written', 1],
      ],
      [
        ['written', 1],
        ['written', 0],
      ],
    ]);
    expect(runs.map((run) => run.committed.runAgain)).toEqual([true, false]);
    const keys = (prefix: string) =>
      listKeys(prefix).then((all) => all.map((key) => key.slice(prefix.length)));
    expect(await keys(pieces.pathPrefix)).toEqual(await keys(whole.pathPrefix));
    for (const key of await keys(whole.pathPrefix)) {
      expect(await readBytes(`${pieces.pathPrefix}${key}`)).toEqual(
        await readBytes(`${whole.pathPrefix}${key}`),
      );
    }
    expect((await cursorStore.get(workspaceId, pieces.id)).get('email_events')?.exportedThroughMs).toBe(
      LIMIT,
    );
    // Assess: the window written by two invocations has the manifest of one pass (keys aside), both files
    const manifests = (prefix: string) => listManifestKeys(prefix);
    expect(await manifests(pieces.pathPrefix)).toHaveLength(2);
    for (const key of await manifests(whole.pathPrefix)) {
      const resumed = (
        await readBytes(`${pieces.pathPrefix}${key.slice(whole.pathPrefix.length)}`)
      ).toString();
      const onePass = (await readBytes(key)).toString();
      expect(resumed).toBe(onePass.replaceAll(`${whole.pathPrefix}/`, `${pieces.pathPrefix}/`));
    }
    const before = manifestKey(pieces.pathPrefix, 'email_events', BEFORE);
    await expectManifestMatchesBucket(before, [
      eventFileKey(pieces.pathPrefix, 'email_events', BEFORE, 0),
      eventFileKey(pieces.pathPrefix, 'email_events', BEFORE, 1),
    ]);
  }, 300_000);
});

describe('findDueDestinations', () => {
  /** The real due index, seen only for this test's workspace (other suites share the table). */
  const isolated = (): EngineDeps['dueIndex'] => {
    const index = new DueIndex(controlTable);
    return {
      queryDuePage: async (now, options) => {
        const page = await index.queryDuePage(now, options);
        return { ...page, entries: page.entries.filter((entry) => entry.workspaceId === workspaceId) };
      },
      markDispatched: (entry, until) => index.markDispatched(entry, until),
    };
  };
  /** Every page of one Dispatch execution at `nowMs`, as the state machine's loop calls them. */
  const dispatchAll = async (nowMs: number, dueIndex: EngineDeps['dueIndex']): Promise<DueDestination[]> => {
    const started: DueDestination[] = [];
    let next: string | undefined;
    do {
      const page = await findDueDestinations(
        { now: new Date(nowMs).toISOString(), next },
        deps({ dueIndex }),
      );
      started.push(...page.destinations);
      next = page.next;
    } while (next !== undefined);
    return started;
  };

  it('settles a destination with nothing new without a run and starts one with new rows once', async () => {
    // Prepare: one export of an empty dataset, one of the ingested email events, one queued manual run
    const quiet = await createDestination({ datasets: ['sms_events'] as EventDataset[] });
    const busy = await createDestination({ datasets: ['email_events'] });
    const queued = await createDestination({
      datasets: ['sms_events'] as EventDataset[],
      status: 'queued',
      manualRunQueued: true,
    });
    const dueIndex = isolated();
    const mine = new Set([quiet.id, busy.id, queued.id]);
    // Act: a tick, the quiet one read back, the next tick a minute later
    const first = await dispatchAll(NOW, dueIndex);
    const settled = await controlStore.getDestination(workspaceId, quiet.id);
    const second = await dispatchAll(NOW + 60_000, dueIndex);
    // Assess
    const started = first.filter((d) => mine.has(d.destinationId));
    expect(started).toEqual(
      expect.arrayContaining([
        { workspaceId, destinationId: busy.id, trigger: 'schedule' },
        { workspaceId, destinationId: queued.id, trigger: 'manual' },
      ]),
    );
    expect(started).toHaveLength(2);
    // The started ones are marked until their lease would end; the quiet one may be due again (its slot
    // can be the next minute) but has nothing new, so nothing starts.
    expect(second.filter((d) => mine.has(d.destinationId))).toEqual([]);
    expect(settled?.exportedThrough.sms_events).toBe(new Date(LIMIT).toISOString());
    expect(settled?.nextRunAt).toBe(new Date(nextSlotAfter(NOW, 'hourly', quiet.id)).toISOString());
    expect(await listKeys(quiet.pathPrefix)).toEqual([]);
  }, 60_000);
});

afterAll(() => {
  if (payloadSizes.atCap !== undefined)
    console.info(
      `ExportRun state at the window cap (3 event datasets + subscribers): ${payloadSizes.atCap} bytes`,
    );
});

describe('time', () => {
  it('keeps the test data inside the event log retention', () => {
    expect(Date.now() - START).toBeLessThan(2 * DAY_MS);
  });
});
