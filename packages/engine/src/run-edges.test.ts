import { randomUUID } from 'node:crypto';
import { CursorStore, LeaseStore, RunStateStore, RunStore, type WindowProgress } from '@sluice/control';
import {
  DAILY_SLOT_SPREAD_MS,
  DAILY_SLOT_START_MS,
  DAY_MS,
  type Dataset,
  type Destination,
  type DestinationNotice,
  DatabaseUnavailableError,
  HOUR_MS,
  nextSlotAfter,
  snapshotSuccessKey,
  spanWindows,
  startOfUtcDay,
  utcDate,
  windowKey,
} from '@sluice/core';
import { EventLogWriter, generateEvents, generateSubscribers } from '@sluice/eventlog';
import { beforeAll, describe, expect, it } from 'vitest';
import { commitRun } from './commit.js';
import { engineHarness } from './engine-harness.test-support.js';
import { type BucketWriterFactory, type EngineDeps, resolveDeps } from './deps.js';
import { recordFailure } from './failure.js';
import type { ItemResult, RunRef, WorkItem } from './payloads.js';
import { claimAndPlan } from './plan.js';
import { LEASE_DURATION_MS } from './positions.js';
import { listKeys, runKeyOf } from './local-bucket.test-support.js';
import { settleExpiredRun } from './settle.js';
import { writeWindow } from './write.js';
import { controlTable, eventTables } from '../../../test/helpers/tables.js';

/**
 * Where a run's steps meet the schedule, a retry, a configuration change and a lost lease (issue 22,
 * defects 7, 8, 9, 12, 13 and 14), on DynamoDB Local and the local bucket, with a given clock.
 */

const cursorStore = new CursorStore(controlTable);
const leaseStore = new LeaseStore(controlTable);
const runStore = new RunStore(controlTable);
const workspaceId = `ws_${randomUUID()}`;
/** Today's UTC midnight; the test data lies on the day before it (D). */
const MIDNIGHT = startOfUtcDay(Date.now());
const DAY_D = MIDNIGHT - DAY_MS;
/** Hourly exports: at NOW the two hours before MIDNIGHT are complete. */
const NOW = MIDNIGHT + 5 * 60_000;
const LIMIT = MIDNIGHT - 1;
const EMAILS = 600;
const CUSTOMS = 400;
const published: DestinationNotice[] = [];

const harness = engineHarness({ workspaceId, folder: 'engine-run-edges' });
const { controlStore, bucketWriterFactory: localBucketWriterFactory } = harness;

/** The engine on the local services at `nowMs`, its notices recorded. */
function deps(nowMs: number, overrides: Partial<EngineDeps> = {}): Partial<EngineDeps> {
  return harness.deps(nowMs, {
    notices: { publish: async (notice) => void published.push(notice) },
    ...overrides,
  });
}

function createDestination(
  datasets: Dataset[],
  frequency: Destination['frequency'] = 'hourly',
  createdAtMs = MIDNIGHT - 2 * HOUR_MS,
): Promise<Destination> {
  return harness.createDestination({
    name: 'Run edges',
    datasets,
    frequency,
    startFrom: new Date(frequency === 'daily' ? DAY_D : MIDNIGHT - 2 * HOUR_MS).toISOString(),
    createdMs: createdAtMs,
    stored: { nextRunAt: null },
  });
}

async function claim(destination: Destination, nowMs: number, overrides: Partial<EngineDeps> = {}) {
  const planned = await claimAndPlan(
    { workspaceId, destinationId: destination.id, trigger: 'schedule', executionId: randomUUID() },
    deps(nowMs, overrides),
  );
  if (planned.outcome !== 'planned') throw new Error(`skipped: ${planned.reason}`);
  return { run: planned.run as RunRef, items: planned.items as WorkItem[] };
}

/** Every item written in-process, the Map's per-item Catch included (a writer's error is its result). */
async function writeAll(
  run: RunRef,
  items: readonly WorkItem[],
  nowMs: number,
  overrides: Partial<EngineDeps> = {},
): Promise<ItemResult[]> {
  const results: ItemResult[] = [];
  for (const item of items) {
    results.push(
      await writeWindow({ run, item }, deps(nowMs, overrides)).catch((error: Error) => ({
        status: 'failed' as const,
        item,
        error: {
          Error: error.name,
          Cause: JSON.stringify({ errorType: error.name, errorMessage: error.message }),
        },
      })),
    );
  }
  return results;
}

/** A whole run at `nowMs`: claim, write, commit. */
async function runAt(destination: Destination, nowMs: number, overrides: Partial<EngineDeps> = {}) {
  const { run, items } = await claim(destination, nowMs, overrides);
  const results = await writeAll(run, items, nowMs, overrides);
  const committed = await commitRun({ run, results }, deps(nowMs, overrides));
  return { run, items, results, committed };
}

async function cursorOf(destination: Destination, dataset: Dataset) {
  return (await cursorStore.get(workspaceId, destination.id)).get(dataset);
}

beforeAll(async () => {
  const writer = new EventLogWriter({ ...eventTables, explicitRecordedAt: 'unchecked' });
  const events = [
    // Day D, for the daily export; its last two hours, for the hourly ones.
    ...generateEvents({
      count: EMAILS,
      workspaceId,
      seed: 22,
      from: DAY_D + HOUR_MS,
      to: LIMIT - 60_000,
      mix: { email_events: 1 },
    }),
    ...generateEvents({
      count: CUSTOMS,
      workspaceId,
      seed: 23,
      from: MIDNIGHT - 2 * HOUR_MS,
      to: LIMIT - 60_000,
      mix: { custom_events: 1 },
    }),
  ];
  expect((await writer.ingestEvents(workspaceId, events)).accepted).toBe(EMAILS + CUSTOMS);
  await writer.upsertSubscribers(workspaceId, [...generateSubscribers({ count: 30, workspaceId })]);
}, 120_000);

describe('the schedule after a run', () => {
  it('keeps a daily export on its own slot: day D is delivered by the first run after D ends, not a day later', async () => {
    // Prepare: a daily export with subscribers, created at noon of day D
    const destination = await createDestination(
      ['email_events', 'subscribers'],
      'daily',
      DAY_D + 12 * HOUR_MS,
    );
    const lastSlotOfTheHour = MIDNIGHT + DAILY_SLOT_START_MS + DAILY_SLOT_SPREAD_MS;

    // Act: run at noon of D, then whenever the export is next due, until two hours after the midnight
    let at = DAY_D + 12 * HOUR_MS;
    const runs: number[] = [];
    let deliveredAt: number | undefined;
    while (at <= MIDNIGHT + 2 * HOUR_MS && runs.length < 6) {
      runs.push(at);
      const { committed } = await runAt(destination, at);
      expect(committed.status).toBe('succeeded');
      const nextRunAt = Date.parse(
        (await controlStore.getDestination(workspaceId, destination.id))!.nextRunAt!,
      );
      // The one rule for the next run: the destination's own slot, unless it must run again at once.
      expect(nextRunAt).toBe(committed.runAgain ? at : nextSlotAfter(at, 'daily', destination.id));
      if (
        deliveredAt === undefined &&
        (await cursorOf(destination, 'email_events'))?.exportedThroughMs === LIMIT
      ) {
        deliveredAt = at;
      }
      at = committed.runAgain ? at + 60_000 : nextRunAt;
    }

    // Assess: day D's events and the snapshot of D+1 came with the first run of D+1, inside the slot hour
    expect(deliveredAt).toBeDefined();
    expect(deliveredAt!).toBeGreaterThan(MIDNIGHT);
    expect(deliveredAt!).toBeLessThan(lastSlotOfTheHour);
    expect((await cursorOf(destination, 'subscribers'))?.snapshotDate).toBe(utcDate(MIDNIGHT));
    const keys = await listKeys(destination.pathPrefix);
    expect(keys.filter((key) => key.includes(`email_events/date=${utcDate(DAY_D)}/`)).length).toBeGreaterThan(
      0,
    );
  }, 120_000);
});

describe('Commit', () => {
  it('adds a run’s rows to totalRowsExported exactly once when retried after its cursor transaction', async () => {
    // Prepare: the destination update after the cursor transaction fails once (a crash, a throttle)
    const destination = await createDestination(['custom_events']);
    const { run, items } = await claim(destination, NOW);
    const results = await writeAll(run, items, NOW);
    let failures = 1;
    const flaky = new RunStateStore(controlTable);
    const update = flaky.update.bind(flaky);
    flaky.update = async (...args) => {
      if (failures-- > 0) throw new DatabaseUnavailableError(new Error('throttled'));
      return update(...args);
    };

    // Act: Commit fails after moving the cursors, then Step Functions retries it (twice: a duplicate)
    await expect(commitRun({ run, results }, deps(NOW, { runState: flaky }))).rejects.toThrow();
    expect((await cursorOf(destination, 'custom_events'))?.exportedThroughMs).toBe(LIMIT);
    const retried = await commitRun({ run, results }, deps(NOW, { runState: flaky }));
    await commitRun({ run, results }, deps(NOW, { runState: flaky }));

    // Assess: the run's rows count once, as its record says
    expect(retried.status).toBe('succeeded');
    expect(await runStore.get(runKeyOf(run))).toMatchObject({ status: 'succeeded', rowCount: CUSTOMS });
    const view = await controlStore.getDestination(workspaceId, destination.id);
    expect(view).toMatchObject({ status: 'idle', totalRowsExported: CUSTOMS });
    expect(await leaseStore.get(workspaceId, destination.id)).toBeUndefined();
  }, 60_000);

  it('moves the cursor of every dataset whose windows were written when another dataset’s writer failed', async () => {
    // Prepare: two event datasets; every custom_events writer fails after its retries
    const destination = await createDestination(['email_events', 'custom_events']);
    const { run, items } = await claim(destination, NOW);
    const results: ItemResult[] = [];
    for (const result of await writeAll(
      run,
      items.filter((item) => item.dataset === 'email_events'),
      NOW,
    ))
      results.push(result);
    for (const item of items.filter((item) => item.dataset === 'custom_events')) {
      results.push({
        status: 'failed',
        item,
        error: { Error: 'BucketUnreachable', Cause: JSON.stringify({ errorMessage: 'connect ETIMEDOUT' }) },
      });
    }

    // Act
    const committed = await commitRun({ run, results }, deps(NOW));

    // Assess: email_events committed through the limit, custom_events where it was, the failure recorded
    expect(committed.status).toBe('failed');
    expect((await cursorOf(destination, 'email_events'))?.exportedThroughMs).toBe(LIMIT);
    expect((await cursorOf(destination, 'custom_events'))?.exportedThroughMs).toBeUndefined();
    const record = await runStore.get(runKeyOf(run));
    expect(record).toMatchObject({ status: 'failed' });
    expect(record?.stats.email_events?.rows).toBeGreaterThan(0);
    expect(await controlStore.getDestination(workspaceId, destination.id)).toMatchObject({
      status: 'failed',
      consecutiveFailures: 1,
      totalRowsExported: record?.rowCount,
    });
  }, 60_000);
});

describe('a failure of a run begun under an older configuration', () => {
  /** What the API's PATCH of new credentials does: a new configVersion, the backoff ended, due now. */
  async function patchCredentials(destination: Destination, atMs: number): Promise<void> {
    await controlStore.updateDestination(
      workspaceId,
      destination.id,
      {
        accessKeyId: 'S3RVER',
        status: 'idle',
        consecutiveFailures: 0,
        nextRunAt: new Date(atMs).toISOString(),
      },
      { bumpConfigVersion: true, now: new Date(atMs) },
    );
  }

  it('neither marks the export failed nor backs it off nor announces it failing (RecordFailure, Commit, settled)', async () => {
    for (const via of ['recordFailure', 'commit', 'settled'] as const) {
      // Prepare: a run claimed with the old key; the customer fixes the credentials meanwhile
      const destination = await createDestination(['custom_events']);
      const { run, items } = await claim(destination, NOW);
      await patchCredentials(destination, NOW + 60_000);
      const denied = {
        Error: 'BucketAccessDenied',
        Cause: JSON.stringify({ errorMessage: 'Access Denied' }),
      };

      // Act: the old run fails with the old key
      const at = NOW + 120_000;
      if (via === 'recordFailure') {
        await recordFailure({ workspaceId, destinationId: destination.id, run, error: denied }, deps(at));
      } else if (via === 'settled') {
        // It died outside its Catch: settled by Dispatch once its lease expired.
        const lease = (await leaseStore.get(workspaceId, destination.id))!;
        await settleExpiredRun(lease, resolveDeps(deps(NOW + LEASE_DURATION_MS + 60_000)));
      } else {
        const results: ItemResult[] = items.map((item) => ({ status: 'failed', item, error: denied }));
        expect((await commitRun({ run, results }, deps(at))).status).toBe('failed');
      }

      // Assess: the destination is as the PATCH left it, free to run at once; no failing notice
      const view = await controlStore.getDestination(workspaceId, destination.id);
      expect(view, via).toMatchObject({ status: 'idle', consecutiveFailures: 0 });
      expect(view?.failing ?? null, via).toBeNull();
      expect(view?.nextRunAt, via).toBe(new Date(NOW + 60_000).toISOString());
      expect(await leaseStore.get(workspaceId, destination.id), via).toBeUndefined();
      expect(
        published.filter((notice) => notice.destinationId === destination.id),
        via,
      ).toEqual([]);
      expect((await runStore.get(runKeyOf(run)))?.status, via).toBe('failed');
    }
  }, 60_000);

  it('still marks the export failed when the configuration is the run’s own', async () => {
    const destination = await createDestination(['custom_events']);
    const { run } = await claim(destination, NOW);
    const denied = { Error: 'BucketAccessDenied', Cause: JSON.stringify({ errorMessage: 'Access Denied' }) };
    await recordFailure(
      { workspaceId, destinationId: destination.id, run, error: denied },
      deps(NOW + 60_000),
    );
    expect(await controlStore.getDestination(workspaceId, destination.id)).toMatchObject({
      status: 'failed',
      consecutiveFailures: 1,
    });
    expect(published.filter((notice) => notice.destinationId === destination.id)).toHaveLength(1);
  }, 60_000);
});

describe('the subscriber snapshot across a midnight', () => {
  it('finishes the snapshot of a day that ended before it was complete, _SUCCESS last, then takes today’s', async () => {
    // Prepare: the snapshot of day D begins at 23:50 and its _SUCCESS fails to upload
    const destination = await createDestination(['subscribers'], 'hourly', DAY_D);
    const before = MIDNIGHT - 10 * 60_000;
    const failingMarker: BucketWriterFactory = (location, credentials) => {
      const writer = localBucketWriterFactory(location, credentials);
      return {
        ...writer,
        writeFile: writer.writeFile.bind(writer),
        writeMarker: async () => {
          throw Object.assign(new Error('connect ETIMEDOUT'), { name: 'BucketUnreachable' });
        },
      };
    };
    const first = await runAt(destination, before, { bucketWriterFactory: failingMarker });
    expect(first.committed.status).toBe('failed');
    const dayD = utcDate(DAY_D);
    const success = (date: string) => snapshotSuccessKey(destination.pathPrefix, date);
    expect(await listKeys(destination.pathPrefix)).not.toContain(success(dayD));

    // Act: the next runs come after the midnight
    const after = MIDNIGHT + 10 * 60_000;
    const second = await runAt(destination, after);
    const third = await runAt(destination, after + 60_000);

    // Assess: day D completed by the first run after midnight, which asks to run again for today's
    expect(second.items).toEqual([expect.objectContaining({ kind: 'snapshot', date: dayD })]);
    expect(second.committed).toEqual({ status: 'succeeded', runAgain: true });
    expect(third.items).toEqual([expect.objectContaining({ kind: 'snapshot', date: utcDate(MIDNIGHT) })]);
    const keys = await listKeys(destination.pathPrefix);
    expect(keys).toContain(success(dayD));
    expect(keys).toContain(success(utcDate(MIDNIGHT)));
    expect((await cursorOf(destination, 'subscribers'))?.snapshotDate).toBe(utcDate(MIDNIGHT));
  }, 60_000);
});

describe('a writer that lost its lease', () => {
  it('uploads nothing: not a resumed file, not the blanking of leftovers, not a manifest', async () => {
    // Prepare: run A left window 1 begun (3 files started, none done); its lease expired and run B holds it
    const destination = await createDestination(['custom_events']);
    const a = await claim(destination, NOW);
    const item = a.items[0] as WorkItem & { kind: 'events' };
    const [window] = spanWindows(item);
    const begun: WindowProgress = {
      dataset: 'custom_events',
      window: windowKey(window!),
      configVersion: a.run.configVersion,
      nextFile: 0,
      maxFile: 2,
      rows: 0,
      files: 0,
      bytes: 0,
      fileFigures: [],
      done: false,
      runId: a.run.runId,
    };
    const fence = {
      lease: { workspaceId, destinationId: destination.id, token: a.run.leaseToken },
      configVersion: a.run.configVersion,
    };
    expect(await cursorStore.saveProgress(fence, begun, new Date(NOW))).toBe('saved');
    const later = NOW + LEASE_DURATION_MS + 60_000;
    const b = await claim(destination, later);
    expect((await leaseStore.get(workspaceId, destination.id))?.token).toBe(b.run.leaseToken);

    // Act: A's writer is invoked late (a retried Map item)
    const result = await writeWindow({ run: a.run, item }, deps(later));

    // Assess
    expect(result).toMatchObject({ status: 'stopped', stopReason: 'lease_lost', files: 0 });
    expect(await listKeys(destination.pathPrefix)).toEqual([]);
  }, 60_000);
});
