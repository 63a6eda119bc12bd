import { randomUUID } from 'node:crypto';
import {
  ArchiveCursorStore,
  ControlStore,
  CursorStore,
  LeaseStore,
  RunStateStore,
  RunStore,
} from '@sluice/control';
import { type Destination, type NewDestinationInput, newDestination } from '@sluice/core';
import {
  claimAndPlan,
  commitRun,
  createBucketWriterFactory,
  type EngineDeps,
  type ExpiredRowsFigures,
  type ItemResult,
  type RunRef,
  type WorkItem,
  writeWindow,
} from '@sluice/engine';
import { EventLogReader, EventLogWriter, type EventSource, generateEvents } from '@sluice/eventlog';
import { SecretSealer } from '@sluice/secrets';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  LOCAL_BUCKET,
  LOCAL_S3_ENDPOINT,
  listKeys,
  readBytes,
  readLines,
} from '../../engine/src/local-bucket.test-support.js';
import { controlTable, eventTables, kmsKey, localBucketOrigins } from '../../../test/helpers/tables.js';
import { ArchiveBucket, createArchiveClient } from './bucket.js';
import { ArchiveCompactor } from './compaction.js';
import { ArchivedEventSource } from './source.js';

/**
 * The export engine behind the hot log: a destination that fell hours behind a hot retention of 90 minutes
 * writes, from the archive, the very files (names and bytes) that a destination on time wrote from the hot log;
 * without the archive the same rows are reported expired.
 */

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const RETENTION_MS = 90 * MINUTE;
const H = Math.floor(Date.now() / HOUR) * HOUR - 8 * HOUR;
const ROWS = 400;
const workspaceId = `ws_${randomUUID()}`;
const controlStore = new ControlStore(controlTable);
const sealer = new SecretSealer(kmsKey);
const archiveCursors = new ArchiveCursorStore(controlTable);
const archive = new ArchiveBucket({
  bucket: process.env.SLUICE_ARCHIVE_BUCKET as string,
  client: createArchiveClient({ localEndpoint: LOCAL_S3_ENDPOINT }),
});
const expired: ExpiredRowsFigures[] = [];
const hotAt = (nowMs: number) => new EventLogReader({ ...eventTables, now: () => nowMs });
/** The scheduled compaction at `nowMs`. */
const compactorAt = (nowMs: number) =>
  new ArchiveCompactor({
    hot: hotAt(nowMs),
    archive,
    cursors: archiveCursors,
    hotRetentionMs: RETENTION_MS,
    now: () => nowMs,
  });
/** The engine's source at `nowMs`: the hot log, and the archive behind it. */
const archivedAt = (nowMs: number) =>
  new ArchivedEventSource({
    hot: hotAt(nowMs),
    archive,
    coverage: archiveCursors,
    hotRetentionMs: RETENTION_MS,
    now: () => nowMs,
  });

function deps(nowMs: number, eventSource: EventSource, withArchive: boolean): Partial<EngineDeps> {
  return {
    controlStore,
    cursors: new CursorStore(controlTable),
    leases: new LeaseStore(controlTable),
    runs: new RunStore(controlTable),
    runState: new RunStateStore(controlTable),
    sealer,
    eventSource,
    ...(withArchive ? { archiveCoverage: archiveCursors } : {}),
    settings: { runBudgetMs: 180_000, eventRetentionMs: RETENTION_MS },
    bucketWriterFactory: createBucketWriterFactory({ allowedEndpoints: localBucketOrigins }),
    metrics: { recordRun: () => undefined, recordExpiredRows: (figures) => expired.push(figures) },
    now: () => new Date(nowMs),
  };
}

async function createDestination(
  options: Pick<Partial<NewDestinationInput>, 'workspaceId' | 'datasets' | 'frequency'> & {
    startMs?: number;
  } = {},
): Promise<Destination> {
  const id = `exp_${randomUUID().replaceAll('-', '')}`;
  const owner = options.workspaceId ?? workspaceId;
  const startMs = options.startMs ?? H;
  return controlStore.createDestination({
    ...newDestination({
      workspaceId: owner,
      id,
      name: 'Behind the hot log',
      provider: 's3',
      bucket: LOCAL_BUCKET,
      region: 'us-east-1',
      endpoint: LOCAL_S3_ENDPOINT,
      pathPrefix: `archive-export/${id}`,
      accessKeyId: 'S3RVER',
      secret: await sealer.seal('S3RVER', { workspaceId: owner, destinationId: id }),
      datasets: options.datasets ?? ['custom_events'],
      frequency: options.frequency ?? 'hourly',
      startFrom: new Date(startMs).toISOString(),
      now: new Date(startMs),
    }),
    status: 'idle',
    manualRunQueued: false,
    nextRunAt: null,
  });
}

/** One whole run in-process (the Map's items one after the other). */
async function runOnce(destination: Destination, engine: Partial<EngineDeps>) {
  const planned = await claimAndPlan(
    {
      workspaceId: destination.workspaceId,
      destinationId: destination.id,
      trigger: 'schedule',
      executionId: randomUUID(),
    },
    engine,
  );
  if (planned.outcome !== 'planned') throw new Error(`skipped: ${planned.reason}`);
  const results: ItemResult[] = [];
  for (const item of planned.items as WorkItem[]) {
    results.push(await writeWindow({ run: planned.run as RunRef, item }, engine));
  }
  return commitRun({ run: planned.run as RunRef, results }, engine);
}

/** The files under a destination's prefix, by name below it, with their bytes. */
async function filesOf(destination: Destination): Promise<Map<string, Buffer>> {
  const files = new Map<string, Buffer>();
  for (const key of await listKeys(destination.pathPrefix)) {
    files.set(key.slice(destination.pathPrefix.length), await readBytes(key));
  }
  return files;
}

describe('an export behind the hot log reads the archive', () => {
  beforeAll(async () => {
    const writer = new EventLogWriter({
      ...eventTables,
      explicitRecordedAt: 'unchecked',
      retentionSeconds: RETENTION_MS / 1000,
      now: () => H,
    });
    const events = generateEvents({
      count: ROWS,
      workspaceId,
      seed: 3,
      from: H,
      to: H + 55 * MINUTE,
      mix: { custom_events: 1 },
    });
    const { accepted } = await writer.ingestEvents(workspaceId, [...events] as unknown as Record<
      string,
      unknown
    >[]);
    expect(accepted).toBe(ROWS);
    // The scheduled compaction, every hour: hour H is archived while its rows are still hot.
    for (let at = H + 75 * MINUTE; at <= H + 7 * HOUR; at += HOUR) {
      await compactorAt(at).compactDataset(workspaceId, 'custom_events');
    }
  });

  it('writes byte-identical files from the archive, every row exactly once, nothing reported expired', async () => {
    // Prepare: a destination on time exports hour H from the hot log, 65 minutes after H.
    const onTime = await createDestination();
    const early = H + 65 * MINUTE;
    expect(await runOnce(onTime, deps(early, hotAt(early), true))).toMatchObject({ status: 'succeeded' });
    // Act: one that was paused exports the same hours seven hours later, when the hot log has lost them.
    const late = H + 7 * HOUR;
    const behind = await createDestination();
    expect(await runOnce(behind, deps(late, archivedAt(late), true))).toMatchObject({ status: 'succeeded' });
    // Assess
    const expected = await filesOf(onTime);
    expect([...expected.keys()]).toEqual([
      `/custom_events/${dateOf(H)}/custom_events-${H - 1}-${H + HOUR - 1}-0000.jsonl.gz`,
    ]);
    const written = await filesOf(behind);
    expect([...written.keys()]).toEqual([...expected.keys()]);
    for (const [name, bytes] of expected) expect(written.get(name)?.equals(bytes)).toBe(true);
    const ids = (await readLines(`${behind.pathPrefix}${[...written.keys()][0]}`)).map(
      (line) => JSON.parse(line).id,
    );
    expect(new Set(ids).size).toBe(ROWS);
    expect(ids).toHaveLength(ROWS);
    expect(expired.filter((figures) => figures.destinationId === behind.id)).toEqual([]);
    const view = await controlStore.getDestination(workspaceId, behind.id);
    expect(view?.exportedThrough.custom_events).toBe(new Date(late - HOUR - 1).toISOString());
  });

  it('without the archive the same rows are reported expired and no file is written', async () => {
    const late = H + 7 * HOUR;
    const behind = await createDestination();
    expect(await runOnce(behind, deps(late, hotAt(late), false))).toMatchObject({ status: 'succeeded' });
    expect(await filesOf(behind)).toEqual(new Map());
    expect(expired.filter((figures) => figures.destinationId === behind.id)).toEqual([
      expect.objectContaining({ dataset: 'custom_events', fromMs: H - 1 }),
    ]);
  });
});

function dateOf(ms: number): string {
  return `date=${new Date(ms).toISOString().slice(0, 10)}`;
}

describe("an archive that stopped before the hot log's horizon", () => {
  it('is not read for the window holding the horizon: no row of the stretch reported expired goes out, no stale status of a message', async () => {
    // Prepare: a day D of message_events. Message m1 is queued and sent in hour 1, which the last compaction
    // archived (the compaction stopped after it); it is delivered in hour 2, which only the hot log held.
    // m2 is sent in the day's last hour.
    const owner = `ws_${randomUUID()}`;
    const D = Math.floor(Date.now() / DAY) * DAY - 3 * DAY;
    const ingestAt = async (atMs: number, input: Record<string, unknown>) => {
      const writer = new EventLogWriter({
        ...eventTables,
        explicitRecordedAt: 'unchecked',
        retentionSeconds: RETENTION_MS / 1000,
        now: () => atMs,
      });
      const result = await writer.ingestEvents(owner, [
        { dataset: 'message_events', updated_at: new Date(atMs).toISOString(), ...input },
      ]);
      expect(result.currentRows).toMatchObject({ emitted: 1 });
    };
    const whole = (id: string, atMs: number) => ({
      message_id: id,
      conversation_id: 'conv_1',
      direction: 'outbound',
      status: 'queued',
      from_phone_number: '471016',
      to_phone_number: '+15555550123',
      media_url_count: 0,
      created_at: new Date(atMs).toISOString(),
    });
    await ingestAt(D + HOUR + 5 * MINUTE, whole('m1', D + HOUR + 5 * MINUTE));
    await ingestAt(D + HOUR + 25 * MINUTE, { message_id: 'm1', status: 'sent' });
    const compactedAt = D + 2 * HOUR + 15 * MINUTE;
    await compactorAt(compactedAt).compactDataset(owner, 'message_events');
    expect(await archiveCursors.get(owner, 'message_events')).toMatchObject({ throughMs: D + 2 * HOUR });
    await ingestAt(D + 2 * HOUR + 20 * MINUTE, { message_id: 'm1', status: 'delivered' });
    await ingestAt(D + 23 * HOUR + 50 * MINUTE, whole('m2', D + 23 * HOUR + 50 * MINUTE));
    const destination = await createDestination({
      workspaceId: owner,
      datasets: ['message_events'],
      frequency: 'daily',
      startMs: D,
    });

    // Act: the daily export's first run, ten minutes after the day, when the hot log keeps 90 minutes
    const late = D + DAY + 10 * MINUTE;
    expect(await runOnce(destination, deps(late, archivedAt(late), true))).toMatchObject({
      status: 'succeeded',
    });

    // Assess: the day's file holds m2 only; m1's rows are in the stretch reported expired
    const files = [...(await filesOf(destination)).keys()];
    expect(files).toEqual([
      `/message_events/${dateOf(D)}/message_events-${D - 1}-${D + DAY - 1}-0000.jsonl.gz`,
    ]);
    const lines = await readLines(`${destination.pathPrefix}${files[0]}`);
    expect(lines.map((line) => JSON.parse(line).message_id)).toEqual(['m2']);
    expect(expired.filter((figures) => figures.destinationId === destination.id)).toEqual([
      expect.objectContaining({ dataset: 'message_events', fromMs: D - 1, toMs: late - RETENTION_MS - 1 }),
    ]);
  });
});
