import { randomUUID } from 'node:crypto';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import {
  CursorStore,
  type DataExportRun,
  documentClient,
  LeaseStore,
  type ProgressCount,
  runsPk,
  RunStore,
  workspacePk,
} from '@sluice/control';
import {
  type Destination,
  HOUR_MS,
  snapshotFileKey,
  snapshotSuccessKey,
  startOfUtcDay,
  utcDate,
} from '@sluice/core';
import { EventLogWriter, type EventSource, generateEvents } from '@sluice/eventlog';
import { beforeAll, describe, expect, it } from 'vitest';
import { commitRun } from './commit.js';
import { engineHarness } from './engine-harness.test-support.js';
import { type BucketWriterFactory, createBucketWriterFactory, type EngineDeps, resolveDeps } from './deps.js';
import type { ExpiredRowsFigures } from './metrics.js';
import type { ItemResult, RunRef, WindowResult, WorkItem } from './payloads.js';
import { claimAndPlan } from './plan.js';
import { LEASE_DURATION_MS } from './positions.js';
import { EXPIRED_RUN_MESSAGE, settleExpiredRun } from './settle.js';
import { listKeys, readLines, runKeyOf } from './local-bucket.test-support.js';
import { writeWindow } from './write.js';
import { controlTable, eventTables, localBucketOrigins } from '../../../test/helpers/tables.js';

/** The production writer, with the local s3rver allow-listed as the local runtime does. */
const localBucketWriterFactory = createBucketWriterFactory({ allowedEndpoints: localBucketOrigins });

/**
 * The fault matrix of the export engine, on DynamoDB Local and the local bucket: each case ends with the
 * rows in the bucket exactly once per window, a contiguous cursor, and nothing left `running`.
 */

const cursorStore = new CursorStore(controlTable);
const leaseStore = new LeaseStore(controlTable);
const runStore = new RunStore(controlTable);
const workspaceId = `ws_${randomUUID()}`;
const MIDNIGHT = startOfUtcDay(Date.now());
/** Two hours of hourly windows before NOW's limit, 3,000 custom events in them. */
const START = MIDNIGHT - 2 * HOUR_MS;
const NOW = MIDNIGHT + 5 * 60_000;
const LIMIT = MIDNIGHT - 1;
const EVENTS = 3_000;
const expired: ExpiredRowsFigures[] = [];

const harness = engineHarness({ workspaceId, folder: 'engine-faults', nowMs: NOW });
const { controlStore } = harness;

/** The engine on the local services at NOW, its expired-rows figures recorded. */
function deps(overrides: Partial<EngineDeps> = {}): Partial<EngineDeps> {
  return harness.deps(NOW, {
    metrics: { recordRun: () => undefined, recordExpiredRows: (f) => expired.push(f) },
    ...overrides,
  });
}

function createDestination(overrides: Partial<Destination> = {}): Promise<Destination> {
  return harness.createDestination({
    name: 'Fault matrix',
    datasets: overrides.datasets ?? ['custom_events'],
    startFrom: new Date(START).toISOString(),
    stored: { nextRunAt: null, ...overrides },
  });
}

/** Every row id in the event files of a prefix, with how often it appears. */
async function eventIds(prefix: string): Promise<Map<string, number>> {
  const ids = new Map<string, number>();
  for (const key of (await listKeys(prefix)).filter((k) => k.includes('/custom_events/'))) {
    for (const line of await readLines(key)) {
      const id = (JSON.parse(line) as { id: string }).id;
      ids.set(id, (ids.get(id) ?? 0) + 1);
    }
  }
  return ids;
}

async function claim(destination: Destination, nowMs = NOW, overrides: Partial<EngineDeps> = {}) {
  const planned = await claimAndPlan(
    { workspaceId, destinationId: destination.id, trigger: 'schedule', executionId: randomUUID() },
    deps({ now: () => new Date(nowMs), ...overrides }),
  );
  if (planned.outcome !== 'planned') throw new Error(`skipped: ${planned.reason}`);
  return { run: planned.run as RunRef, items: planned.items as WorkItem[] };
}

/** A whole run in-process, the Map's per-item Catch included. */
async function runOnce(destination: Destination, nowMs = NOW, overrides: Partial<EngineDeps> = {}) {
  const run = await harness.runOnce(destination, {
    nowMs,
    overrides: { metrics: deps().metrics, ...overrides },
    catchWriterErrors: true,
  });
  if (run === undefined) throw new Error('skipped: the claim planned nothing');
  return run;
}

beforeAll(async () => {
  const events = [
    ...generateEvents({
      count: EVENTS,
      workspaceId,
      seed: 5,
      from: START,
      to: LIMIT - 60_000,
      mix: { custom_events: 1 },
    }),
  ];
  const result = await new EventLogWriter({ ...eventTables, explicitRecordedAt: 'unchecked' }).ingestEvents(
    workspaceId,
    events,
  );
  expect(result.accepted).toBe(EVENTS);
}, 120_000);

describe('the fault matrix', () => {
  it('an execution that dies after writing (timeout, lost invocation): settled when its lease expires, then resumed', async () => {
    // Prepare
    const destination = await createDestination();
    const { run, items } = await claim(destination);
    await writeWindow({ run, item: items[0] as WorkItem }, deps());
    // Act 1: no Commit, no RecordFailure; the lease expires and dispatch (or the next claim) settles it
    const lease = await leaseStore.get(workspaceId, destination.id);
    expect(lease).toBeDefined();
    const later = NOW + LEASE_DURATION_MS + 60_000;
    expect(await settleExpiredRun(lease!, resolveDeps(deps({ now: () => new Date(later) })))).toBe(true);
    // Assess 1
    expect(await runStore.get(runKeyOf(run))).toMatchObject({
      status: 'failed',
      error: EXPIRED_RUN_MESSAGE,
      // The job history shows the dataset it had begun as failed, with nothing committed.
      stats: { custom_events: { status: 'failed', rows: 0, files: 0, bytes: 0, durationMs: 0 } },
    });
    expect(await controlStore.getDestination(workspaceId, destination.id)).toMatchObject({
      status: 'failed',
      consecutiveFailures: 1,
      lastError: EXPIRED_RUN_MESSAGE,
    });
    expect(await leaseStore.get(workspaceId, destination.id)).toBeUndefined();
    // A second settle of the same death changes nothing.
    expect(await settleExpiredRun(lease!, resolveDeps(deps({ now: () => new Date(later) })))).toBe(false);
    expect((await controlStore.getDestination(workspaceId, destination.id))?.consecutiveFailures).toBe(1);
    // Act 2: the next run
    const next = await runOnce(destination, later);
    // Assess 2: every row once, the cursor at the limit, nothing running
    expect(next.committed.status).toBe('succeeded');
    const ids = await eventIds(destination.pathPrefix);
    expect(ids.size).toBe(EVENTS);
    expect([...ids.values()].every((n) => n === 1)).toBe(true);
    expect((await cursorStore.get(workspaceId, destination.id)).get('custom_events')?.exportedThroughMs).toBe(
      LIMIT,
    );
    expect(await controlStore.getDestination(workspaceId, destination.id)).toMatchObject({
      status: 'idle',
      consecutiveFailures: 0,
    });
  }, 120_000);

  it('a Commit retried (a transient error after it wrote, a duplicate): the same outcome, counts kept', async () => {
    // Prepare
    const destination = await createDestination();
    const { run, items } = await claim(destination);
    const results = [] as ItemResult[];
    for (const item of items) results.push(await writeWindow({ run, item }, deps()));
    // Act
    const first = await commitRun({ run, results }, deps());
    const recorded = await runStore.get(runKeyOf(run));
    const again = await commitRun({ run, results }, deps());
    const late = await commitRun({ run, results: [] }, deps({ now: () => new Date(NOW + HOUR_MS) }));
    // Assess
    expect(first).toEqual({ status: 'succeeded', runAgain: false });
    expect(again).toEqual(first);
    expect(late).toEqual(first);
    expect(recorded).toMatchObject({ status: 'succeeded', rowCount: EVENTS });
    expect(await runStore.get(runKeyOf(run))).toEqual(recorded);
  }, 120_000);

  it('a RecordFailure of a run that lost its lease cannot mark the destination failed', async () => {
    // Prepare: run A's lease expired and run B holds the destination now
    const destination = await createDestination();
    const a = await claim(destination);
    const b = await claim(destination, NOW + LEASE_DURATION_MS + 1);
    const before = await controlStore.getDestination(workspaceId, destination.id);
    // Act: A's late RecordFailure
    const { recordFailure } = await import('./failure.js');
    const outcome = await recordFailure(
      {
        workspaceId,
        destinationId: destination.id,
        run: a.run,
        error: { Error: 'States.Timeout', Cause: 'x' },
      },
      deps({ now: () => new Date(NOW + LEASE_DURATION_MS + 2) }),
    );
    // Assess: B's destination is untouched, B still holds the lease, A's record is failed
    expect(outcome.nextRunAt).toBeNull();
    const view = await controlStore.getDestination(workspaceId, destination.id);
    expect(view?.status).toBe('running');
    // (B's claim settled A's expired run once; A's own late report counts nothing more.)
    expect(view?.consecutiveFailures).toBe(before?.consecutiveFailures);
    expect(view?.lastError).toBe(EXPIRED_RUN_MESSAGE);
    expect((await leaseStore.get(workspaceId, destination.id))?.runId).toBe(b.run.runId);
    expect((await runStore.get(runKeyOf(a.run)))?.status).toBe('failed');
  }, 60_000);

  it('a destination deleted mid-run: no lease, cursor, progress or run record is left behind', async () => {
    // Prepare
    const destination = await createDestination();
    const { run, items } = await claim(destination);
    const first = await writeWindow({ run, item: items[0] as WorkItem }, deps());
    // Act
    await controlStore.deleteDestination(workspaceId, destination.id);
    const rest = await writeWindow({ run, item: items[1] as WorkItem }, deps());
    const committed = await commitRun({ run, results: [first, rest] }, deps());
    // Assess
    expect(rest).toMatchObject({ status: 'stopped', stopReason: 'deleted' });
    expect(committed).toEqual({ status: 'stopped', runAgain: false });
    const left = await documentClient.send(
      new QueryCommand({
        TableName: process.env.SLUICE_CONTROL_TABLE,
        KeyConditionExpression: 'PK = :pk AND begins_with(SK, :sk)',
        ExpressionAttributeValues: { ':pk': workspacePk(workspaceId), ':sk': `DEST#${destination.id}` },
      }),
    );
    expect(left.Items).toEqual([]);
    const runs = await documentClient.send(
      new QueryCommand({
        TableName: process.env.SLUICE_CONTROL_TABLE,
        KeyConditionExpression: 'PK = :pk',
        ExpressionAttributeValues: { ':pk': runsPk(workspaceId, destination.id) },
      }),
    );
    expect(runs.Items).toEqual([]);
  }, 60_000);

  it('an export behind the event log retention: the lost span is reported, the cursor moves on', async () => {
    // Prepare: a retention of one hour; the export starts two hours back
    const destination = await createDestination();
    const settings = { settings: { runBudgetMs: 180_000, eventRetentionMs: HOUR_MS } };
    // Act
    const { run, committed } = await runOnce(destination, NOW, settings);
    // Assess
    expect(committed.status).toBe('succeeded');
    const lost = expired.filter((f) => f.destinationId === destination.id);
    expect(lost).toEqual([
      // Through the horizon itself (NOW - 1 hour), not rounded down to the grid.
      expect.objectContaining({ dataset: 'custom_events', fromMs: START - 1, toMs: NOW - HOUR_MS - 1 }),
    ]);
    const record = await runStore.get(runKeyOf(run));
    expect(record?.error).toMatch(/custom_events from .* left the event log/);
    const view = await controlStore.getDestination(workspaceId, destination.id);
    expect(view?.lastError).toBe(record?.error);
    expect(view?.exportedThrough.custom_events).toBe(new Date(LIMIT).toISOString());
  }, 60_000);

  it('a snapshot retried with fewer subscribers: no file of the earlier attempt stays readable as data, _SUCCESS last', async () => {
    // Prepare: 120,000 subscribers (three files), an attempt that crashes after uploading its third file
    // (before it could save that), then a retry with 90,000.
    const destination = await createDestination({ datasets: ['subscribers'] });
    const lines = (count: number) => {
      const page = { lines: [] as string[], keys: [] as string[] };
      for (let i = 0; i < count; i++) {
        page.lines.push(`{"id":"sub_${String(i).padStart(6, '0')}","email":"s${i}@example.com"}`);
        page.keys.push(`0#sub_${String(i).padStart(6, '0')}`);
      }
      return page;
    };
    const source = (count: number): EventSource => ({
      readWindow: async function* () {},
      hasRowsAfter: async () => false,
      readSubscribers: async function* (_workspaceId, afterKey) {
        const page = lines(count);
        const start = afterKey === undefined ? 0 : page.keys.findIndex((key) => key > afterKey);
        if (start >= 0 && start < count)
          yield { lines: page.lines.slice(start), keys: page.keys.slice(start) };
      },
    });
    let uploads = 0;
    const crashing: BucketWriterFactory = (location, credentials) => {
      const real = localBucketWriterFactory(location, credentials);
      return {
        ...real,
        writeFile: async (key, l, options) => {
          const file = await real.writeFile(key, l, options);
          if (++uploads === 3) throw new Error('the writer was lost');
          return file;
        },
      };
    };
    const today = utcDate(NOW);
    const { run, items } = await claim(destination);
    const snapshot = items.find((item) => item.kind === 'snapshot') as WorkItem;
    const crashed = await writeWindow(
      { run, item: snapshot },
      deps({ eventSource: source(120_000), bucketWriterFactory: crashing }),
    ).catch((error: Error) => error);
    expect(crashed).toBeInstanceOf(Error);
    expect(await listKeys(destination.pathPrefix)).toContain(
      snapshotFileKey(destination.pathPrefix, today, 2),
    );
    // Act: the retry, by the same run (as the workflow's Retry does)
    const retried = await writeWindow({ run, item: snapshot }, deps({ eventSource: source(90_000) }));
    const committed = await commitRun({ run, results: [retried] }, deps());
    // Assess: file 2 holds no line; the data files hold 100,000 lines, each subscriber once; _SUCCESS is there
    expect(committed.status).toBe('succeeded');
    const prefix = destination.pathPrefix;
    expect(await readLines(snapshotFileKey(prefix, today, 2))).toEqual([]);
    const all = [
      ...(await readLines(snapshotFileKey(prefix, today, 0))),
      ...(await readLines(snapshotFileKey(prefix, today, 1))),
    ];
    expect(new Set(all).size).toBe(all.length);
    expect(await listKeys(prefix)).toContain(snapshotSuccessKey(prefix, today));
    expect((await cursorStore.get(workspaceId, destination.id)).get('subscribers')?.snapshotDate).toBe(today);
  }, 180_000);
});

/** The rows of the destination's event files: every id exactly once, or -1. */
async function idsInBucket(destination: Destination): Promise<number> {
  const ids = await eventIds(destination.pathPrefix);
  return [...ids.values()].every((n) => n === 1) ? ids.size : -1;
}

async function record(run: RunRef): Promise<DataExportRun> {
  const stored = await runStore.get(runKeyOf(run));
  if (stored === undefined) throw new Error('no run record');
  return stored;
}

describe('the run record while a run runs', () => {
  it('grows as the writer invocations of a small budget finish, and ends at the committed rows', async () => {
    // Prepare
    const destination = await createDestination();
    const { run, items } = await claim(destination);
    expect((await record(run)).stats).toEqual({
      custom_events: { status: 'running', rows: 0, files: 0, bytes: 0, durationMs: 0 },
    });
    // Act: every invocation is out of time after one file or window (the Map loops on `partial`)
    const seen: DataExportRun[] = [];
    const results: ItemResult[] = [];
    for (const item of items) {
      let result: WindowResult;
      do {
        result = await writeWindow({ run, item }, deps(), { deadlineMs: 0 });
        seen.push(await record(run));
      } while (result.status === 'partial');
      results.push(result);
    }
    const committed = await commitRun({ run, results }, deps());
    const final = await record(run);
    // Assess: several invocations, each seeing more rows, all while running
    expect(seen.length).toBeGreaterThanOrEqual(2);
    expect(seen.every((entry) => entry.status === 'running')).toBe(true);
    const rows = seen.map((entry) => entry.stats.custom_events?.rows ?? 0);
    for (let i = 1; i < rows.length; i++) expect(rows[i]).toBeGreaterThanOrEqual(rows[i - 1] as number);
    expect(new Set(rows).size).toBe(seen.length);
    expect(rows[0]).toBeGreaterThan(0);
    expect(rows[0]).toBeLessThan(EVENTS);
    expect(seen.map((entry) => entry.rowCount)).toEqual(rows);
    expect(seen.at(-1)).toMatchObject({
      rowCount: EVENTS,
      fileCount: final.fileCount,
      byteCount: final.byteCount,
    });
    // Commit's exact totals: the rows in the bucket
    expect(committed.status).toBe('succeeded');
    expect(await idsInBucket(destination)).toBe(EVENTS);
    expect(final).toMatchObject({ status: 'succeeded', rowCount: EVENTS });
    expect(final.stats.custom_events).toMatchObject({
      status: 'succeeded',
      rows: EVENTS,
      files: final.fileCount,
      durationMs: expect.any(Number),
    });
  }, 120_000);

  it('counts a file once when the writer dies after saving it and the save is applied again', async () => {
    // Prepare: a writer whose first counted save commits, then the invocation dies before going on
    const destination = await createDestination();
    const { run, items } = await claim(destination);
    const item = items[0] as WorkItem;
    let replay: Parameters<CursorStore['saveProgress']> | undefined;
    const dying = Object.create(cursorStore) as CursorStore;
    dying.saveProgress = async (...args) => {
      const outcome = await cursorStore.saveProgress(...args);
      const count = args[3] as ProgressCount | undefined;
      if (replay === undefined && count !== undefined && count.files > 0) {
        replay = structuredClone(args);
        throw new Error('invocation died after the save');
      }
      return outcome;
    };
    await expect(writeWindow({ run, item }, deps({ cursors: dying }))).rejects.toThrow();
    const afterDeath = await record(run);
    // Act: the same save delivered again, then the retried invocation and the rest of the run
    const [fence, progress, now, count] = replay as Parameters<CursorStore['saveProgress']>;
    const again = await cursorStore.saveProgress(fence, progress, new Date(now), count);
    const afterReplay = await record(run);
    const results: ItemResult[] = [];
    for (const each of items) results.push(await writeWindow({ run, item: each }, deps()));
    const beforeCommit = await record(run);
    await commitRun({ run, results }, deps());
    // Assess
    expect(afterDeath.rowCount).toBeGreaterThan(0);
    expect(afterDeath.rowCount).toBe(count?.rows);
    expect(again).toBe('already_saved');
    expect(afterReplay).toEqual(afterDeath);
    expect(beforeCommit).toMatchObject({ status: 'running', rowCount: EVENTS });
    expect(beforeCommit.stats.custom_events?.rows).toBe(EVENTS);
    expect(await idsInBucket(destination)).toBe(EVENTS);
    expect(await record(run)).toMatchObject({ status: 'succeeded', rowCount: EVENTS });
  }, 120_000);

  it('keeps writing when the run record cannot take the count', async () => {
    // Prepare: the record finished under the writer (as a settle of an expired run would)
    const destination = await createDestination();
    const { run, items } = await claim(destination);
    const outcome = { rowCount: 0, fileCount: 0, byteCount: 0, stats: {}, error: 'settled' };
    expect(
      await runStore.finish(runKeyOf(run), {
        status: 'failed',
        finishedAt: new Date(NOW).toISOString(),
        ...outcome,
      }),
    ).toBe(true);
    // Act
    const results = await Promise.all(items.map((item) => writeWindow({ run, item }, deps())));
    // Assess: every file written and its progress saved, the finished record unchanged
    expect(results.every((result) => result.status === 'written')).toBe(true);
    expect(await idsInBucket(destination)).toBe(EVENTS);
    const progress = await cursorStore.getProgress(workspaceId, destination.id);
    expect([...progress.values()].reduce((sum, entry) => sum + entry.rows, 0)).toBe(EVENTS);
    expect(await record(run)).toMatchObject({ status: 'failed', ...outcome });
  }, 120_000);
});
