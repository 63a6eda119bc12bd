import { createHash, randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import {
  type Backfill,
  backfillRange,
  DAY_MS,
  type Destination,
  type EventDataset,
  gridTimingOf,
  HOUR_MS,
  type Schedule,
  startOfUtcDay,
} from '@sluice/core';
import { EventLogWriter, generateDatasetRows, generateEvents } from '@sluice/eventlog';
import { beforeAll, describe, expect, it } from 'vitest';
import { eventTables, localBucketOrigins } from '../../../test/helpers/tables.js';
import { commitRun } from './commit.js';
import { engineHarness } from './engine-harness.test-support.js';
import { type BucketWriterFactory, createBucketWriterFactory } from './deps.js';
import { listKeys, listManifestKeys, listSchemaKeys, readBytes } from './local-bucket.test-support.js';
import type { ItemResult, RunRef, RunTrigger } from './payloads.js';
import { claimAndPlan } from './plan.js';
import { writeWindow } from './write.js';

/**
 * The `run_hour` layout and chosen run times (issue 25) against the local services: the production writer
 * on s3rver, the stores on DynamoDB Local, on a given clock. The expected names are spelt out here from the
 * reference's pattern, not computed with the code under test.
 */

const MINUTE_MS = 60_000;
const workspaceId = `ws_${randomUUID()}`;
/** A UTC midnight two days ago: the rows lie in its first ten hours. */
const DAY0 = startOfUtcDay(Date.now()) - 2 * DAY_MS;
const ROWS = 500;
const RETENTION_MS = 35 * DAY_MS;
const recorded: number[] = [];
/** message_events rows ingested, and the hours (epoch ms / HOUR_MS) they were recorded in. */
let messageCount = 0;
const messageHours = new Set<number>();

const harness = engineHarness({ workspaceId, folder: 'run-hour-test', eventRetentionMs: RETENTION_MS });
const { deps, controlStore, backfills } = harness;

/** A `run_hour` (unless `layout`) Parquet (unless `format`) export of sms_events, stored. */
function createDestination(options: {
  schedule?: Schedule;
  frequency?: Destination['frequency'];
  layout?: Destination['layout'];
  format?: 'parquet' | 'jsonl';
  startFromMs?: number;
  createdMs?: number;
  datasets?: Destination['datasets'];
}): Promise<Destination> {
  const createdMs = options.createdMs ?? DAY0 - HOUR_MS;
  return harness.createDestination({
    name: 'run_hour test',
    datasets: options.datasets ?? ['sms_events'],
    frequency: options.frequency,
    startFrom: new Date(options.startFromMs ?? createdMs).toISOString(),
    fileFormat:
      options.format === 'jsonl'
        ? { format: 'jsonl', compression: 'gzip' }
        : { format: 'parquet', compression: 'snappy' },
    ...(options.layout !== 'date' ? { layout: 'run_hour' as const } : {}),
    schedule: options.schedule,
    createdMs,
  });
}

async function runUntilDone(
  destination: Pick<Destination, 'id'>,
  nowMs: number,
  trigger: RunTrigger = 'schedule',
): Promise<void> {
  await harness.runUntilDone(destination, { nowMs, trigger, maxRuns: 20 });
}

/** The reference's name of a window's part 0, from the slot (its scheduled run) and the export id. */
function expectedKey(
  destination: Destination,
  slotMs: number,
  extension = 'parquet',
  dataset: EventDataset = 'sms_events',
): string {
  const iso = new Date(slotMs).toISOString();
  const stamp = `${iso.slice(0, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}T${iso.slice(11, 13)}${iso.slice(14, 16)}${iso.slice(17, 19)}Z`;
  const job = createHash('sha256').update(`${destination.id}:${stamp}`).digest('hex').slice(0, 12);
  return (
    `${destination.pathPrefix}/v1/schema_type=${dataset}/year=${iso.slice(0, 4)}/month=${iso.slice(5, 7)}/` +
    `day=${iso.slice(8, 10)}/hour=${iso.slice(11, 13)}/${workspaceId}_${dataset}_${stamp}_${job}.part-000.${extension}`
  );
}

/** Every object under the prefix, data and manifests, with its SHA-256. */
async function objectsOf(destination: Destination): Promise<Map<string, string>> {
  const objects = new Map<string, string>();
  for (const key of [
    ...(await listKeys(destination.pathPrefix)),
    ...(await listManifestKeys(destination.pathPrefix)),
  ]) {
    objects.set(
      key,
      createHash('sha256')
        .update(await readBytes(key))
        .digest('hex'),
    );
  }
  return objects;
}

/** The rows DuckDB reads with the reference's query, on a copy of the bucket under the objects' own keys. */
async function duckdbCount(
  destination: Destination,
  dataset: EventDataset = 'sms_events',
): Promise<{ rows: number; hours: number }> {
  const folder = await mkdtemp(join(tmpdir(), 'sluice-run-hour-'));
  for (const key of await listKeys(destination.pathPrefix)) {
    const path = join(folder, key);
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, await readBytes(key));
  }
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  try {
    // The reference's query, on the folder the objects were copied to
    const glob = `${folder}/${destination.pathPrefix}/v1/schema_type=${dataset}/**/*.parquet`;
    const reader = await connection.runAndReadAll(
      `SELECT count(*)::INTEGER AS n, count(DISTINCT hour)::INTEGER AS h FROM read_parquet('${glob}')`,
    );
    const [row] = reader.getRowObjectsJson() as { n: number; h: number }[];
    return { rows: Number(row?.n), hours: Number(row?.h) };
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}

/** A queued range backfill of `[fromMs, toMs)` of sms_events, cut on the export's grid as the API cuts it. */
async function createBackfill(
  destination: Destination,
  fromMs: number,
  toMs: number,
  nowMs: number,
  datasets: EventDataset[] = ['sms_events'],
) {
  const iso = new Date(nowMs).toISOString();
  const backfill: Backfill = {
    id: `bf_${nowMs.toString(16).padStart(12, '0')}${randomUUID().replaceAll('-', '').slice(0, 12)}`,
    workspaceId,
    destinationId: destination.id,
    status: 'queued',
    fullHistory: false,
    datasets,
    from: new Date(fromMs).toISOString(),
    to: new Date(toMs).toISOString(),
    range: backfillRange(fromMs, toMs, destination.frequency, nowMs, gridTimingOf(destination)),
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

beforeAll(async () => {
  const writer = new EventLogWriter({ ...eventTables, explicitRecordedAt: 'unchecked' });
  const events = [
    ...generateEvents({
      count: ROWS,
      workspaceId,
      seed: 25,
      from: DAY0,
      to: DAY0 + 10 * HOUR_MS - 1,
      mix: { sms_events: 1 },
    }),
  ] as unknown as Record<string, unknown>[];
  for (const event of events) recorded.push(Date.parse(String(event.recorded_at)));
  const result = await writer.ingestEvents(workspaceId, events);
  expect(result.invalid).toEqual([]);
  const messages = [
    ...generateDatasetRows({
      dataset: 'message_events',
      count: 120,
      workspaceId,
      seed: 25,
      from: DAY0,
      to: DAY0 + 10 * HOUR_MS - 1,
    }),
  ] as unknown as Record<string, unknown>[];
  for (const row of messages) messageHours.add(Math.floor(Date.parse(String(row.recorded_at)) / HOUR_MS));
  expect((await writer.ingestEvents(workspaceId, messages)).invalid).toEqual([]);
  messageCount = emittedPerWindow(messages);
}, 120_000);

/**
 * The rows the message_events files hold (docs/internals.md, "Current-row datasets"): a message is emitted when
 * new and on each status change (a change with an older `updated_at` ignored), one row per message and window;
 * the windows of a `{minute: 5}` run_hour export end on the hour, five minutes before each run.
 */
function emittedPerWindow(messages: readonly Record<string, unknown>[]): number {
  const current = new Map<string, Record<string, unknown>>();
  const emitted = new Set<string>();
  for (const row of messages) {
    const key = String(row.message_id);
    const before = current.get(key);
    if (before !== undefined && Date.parse(String(row.updated_at)) <= Date.parse(String(before.updated_at)))
      continue;
    const emit = before === undefined || (row.status !== undefined && row.status !== before.status);
    current.set(key, { ...before, ...row });
    // Windows are (h - 1 ms, h + 1 h - 1 ms]: a row recorded on the hour is in the hour it opens.
    const window = Math.floor(Date.parse(String(row.recorded_at)) / HOUR_MS);
    if (emit) emitted.add(`${key}#${window}`);
  }
  return emitted.size;
}

describe('the run_hour layout', () => {
  it('writes the reference names for {"minute": 5}, DuckDB reads them, and a late run and a backfill rewrite the same objects', async () => {
    // Prepare: an hourly Parquet run_hour export from the first hour of the rows
    const destination = await createDestination({
      schedule: { minute: 5 },
      startFromMs: DAY0 + 20 * MINUTE_MS,
    });

    // Act: the run at 10:05 (the slot of the window 09:00-10:00)
    await runUntilDone(destination, DAY0 + 10 * HOUR_MS + 5 * MINUTE_MS);

    // Assess: one file per hour, under the hour of its run, named by its run at :05
    const keys = await listKeys(destination.pathPrefix);
    const expected = Array.from({ length: 10 }, (_, h) =>
      expectedKey(destination, DAY0 + (h + 1) * HOUR_MS + 5 * MINUTE_MS),
    ).sort();
    expect(keys).toEqual(expected);
    // The whole first hour (the start rounds down to its window's start), every row once
    expect(await duckdbCount(destination)).toEqual({ rows: ROWS, hours: 10 });
    const manifests = await listManifestKeys(destination.pathPrefix);
    expect(manifests).toHaveLength(10);
    const first = JSON.parse((await readBytes(manifests[0] as string)).toString());
    expect(first).toMatchObject({ layout: 'run_hour', format: 'parquet' });
    expect(first.files.map((file: { key: string }) => file.key)).toEqual([
      keys.find((key) => key.includes(first.slot.slice(0, 13).replace(/[-:]/g, ''))),
    ]);
    // The schema and recipes beside the data, written once for this configuration
    expect(await listSchemaKeys(destination.pathPrefix)).toEqual(
      [
        'athena.sql',
        'bigquery.sql',
        'databricks.py',
        'duckdb.sql',
        'glue.txt',
        'schema.json',
        'snowflake.sql',
      ].map((name) => `${destination.pathPrefix}/_sluice/schema/sms_events/${name}`),
    );
    // The next run is at the next :05
    const stored = await controlStore.getDestination(workspaceId, destination.id);
    expect(stored?.schemaWritten).toMatch(/^[0-9a-f]{16}$/);
    expect(stored?.nextRunAt).toBe(new Date(DAY0 + 11 * HOUR_MS + 5 * MINUTE_MS).toISOString());
    const before = await objectsOf(destination);

    // Act: a late run long after, and a backfill of the whole range
    await runUntilDone(destination, DAY0 + 13 * HOUR_MS + 17 * MINUTE_MS);
    const stored2 = await controlStore.getDestination(workspaceId, destination.id);
    const backfillId = await createBackfill(destination, DAY0, DAY0 + 10 * HOUR_MS, DAY0 + 13 * HOUR_MS);
    await runUntilDone(destination, DAY0 + 13 * HOUR_MS + 20 * MINUTE_MS, 'backfill');

    // Assess: the backfill is done and rewrote the same names with the same bytes; nothing else appeared
    expect((await backfills.get(workspaceId, destination.id, backfillId))?.status).toBe('succeeded');
    expect(stored2?.exportedThrough.sms_events).toBe(new Date(DAY0 + 13 * HOUR_MS - 1).toISOString());
    expect(await objectsOf(destination)).toEqual(before);
  }, 180_000);

  it('the done check: message_events, run_hour, Parquet, {"minute": 5}: the reference names and query, a backfill rewrites them', async () => {
    const destination = await createDestination({
      schedule: { minute: 5 },
      startFromMs: DAY0,
      datasets: ['message_events'],
    });

    await runUntilDone(destination, DAY0 + 10 * HOUR_MS + 5 * MINUTE_MS);

    expect(await listKeys(destination.pathPrefix)).toEqual(
      [...messageHours]
        .map((hour) =>
          expectedKey(destination, (hour + 1) * HOUR_MS + 5 * MINUTE_MS, 'parquet', 'message_events'),
        )
        .sort(),
    );
    expect(await duckdbCount(destination, 'message_events')).toEqual({
      rows: messageCount,
      hours: messageHours.size,
    });
    const before = await objectsOf(destination);
    const backfillId = await createBackfill(destination, DAY0, DAY0 + 10 * HOUR_MS, DAY0 + 11 * HOUR_MS, [
      'message_events',
    ]);
    await runUntilDone(destination, DAY0 + 11 * HOUR_MS, 'backfill');
    expect((await backfills.get(workspaceId, destination.id, backfillId))?.status).toBe('succeeded');
    expect(await objectsOf(destination)).toEqual(before);
  }, 120_000);

  it('a run whose writers fail part way, retried by the next run, writes exactly the names of a clean run', async () => {
    // Prepare: the bucket refuses every third upload of the first run
    const destination = await createDestination({
      schedule: { minute: 5 },
      startFromMs: DAY0 + 20 * MINUTE_MS,
    });
    const nowMs = DAY0 + 10 * HOUR_MS + 5 * MINUTE_MS;
    let uploads = 0;
    const real = createBucketWriterFactory({ allowedEndpoints: localBucketOrigins });
    const failing: BucketWriterFactory = (location, credentials) => {
      const writer = real(location, credentials);
      return {
        ...writer,
        writeFile: (key, lines, options) => {
          if (++uploads % 3 === 0)
            throw Object.assign(new Error('bucket went away'), { name: 'BucketUnreachable' });
          return writer.writeFile(key, lines, options);
        },
      };
    };
    const planned = await claimAndPlan(
      { workspaceId, destinationId: destination.id, trigger: 'schedule', executionId: randomUUID() },
      deps(nowMs),
    );
    const run = planned.run as RunRef;
    const results: ItemResult[] = [];
    for (const item of planned.items ?? []) {
      try {
        results.push(await writeWindow({ run, item }, deps(nowMs, { bucketWriterFactory: failing })));
      } catch (error) {
        const name = (error as Error).name;
        results.push({
          status: 'failed',
          item,
          error: { Error: name, Cause: JSON.stringify({ errorType: name }) },
        });
      }
    }
    expect((await commitRun({ run, results }, deps(nowMs))).status).toBe('failed');

    // Act: the next run retries the windows not written
    await runUntilDone(destination, nowMs + 10 * MINUTE_MS);

    // Assess
    expect(await listKeys(destination.pathPrefix)).toEqual(
      Array.from({ length: 10 }, (_, h) =>
        expectedKey(destination, DAY0 + (h + 1) * HOUR_MS + 5 * MINUTE_MS),
      ).sort(),
    );
    expect(await duckdbCount(destination)).toEqual({ rows: ROWS, hours: 10 });
  }, 120_000);

  it('ends every window five minutes before its run on the schedule\'s grid ({"minute": 0}), JSON lines', async () => {
    const destination = await createDestination({
      schedule: { minute: 0 },
      format: 'jsonl',
      startFromMs: DAY0 - 5 * MINUTE_MS,
    });

    await runUntilDone(destination, DAY0 + 10 * HOUR_MS);

    // Windows (h-1):55 → h:55, run at (h+1):00: the rows of 00:00-09:55 in ten files, under hours 01-10
    const keys = await listKeys(destination.pathPrefix);
    const expected = Array.from({ length: 10 }, (_, h) =>
      expectedKey(destination, DAY0 + (h + 1) * HOUR_MS, 'jsonl.gz'),
    ).sort();
    expect(keys).toEqual(expected);
    const before = await objectsOf(destination);

    // A backfill of the hours 02:00-05:00 (on this grid: the windows 01:55 to 05:55) rewrites the same objects
    const backfillId = await createBackfill(
      destination,
      DAY0 + 2 * HOUR_MS,
      DAY0 + 5 * HOUR_MS,
      DAY0 + 11 * HOUR_MS,
    );
    await runUntilDone(destination, DAY0 + 11 * HOUR_MS, 'backfill');
    expect((await backfills.get(workspaceId, destination.id, backfillId))?.status).toBe('succeeded');
    expect(await objectsOf(destination)).toEqual(before);
  }, 120_000);

  it('a new export without startFrom covers only the most recent hour in its first run', async () => {
    // Created at 09:40 (no startFrom: it is the creation time); its queued first run at 09:40
    const createdMs = DAY0 + 9 * HOUR_MS + 40 * MINUTE_MS;
    const destination = await createDestination({ schedule: { minute: 5 }, createdMs });

    await runUntilDone(destination, createdMs);

    // The window 08:00-09:00, whole, named by its run at 09:05
    expect(await listKeys(destination.pathPrefix)).toEqual([
      expectedKey(destination, DAY0 + 9 * HOUR_MS + 5 * MINUTE_MS),
    ]);
    const inHour = recorded.filter((ms) => ms >= DAY0 + 8 * HOUR_MS && ms < DAY0 + 9 * HOUR_MS).length;
    expect(await duckdbCount(destination)).toEqual({ rows: inHour, hours: 1 });
  }, 120_000);

  it('daily {"hour": 8, "minute": 0}: one window 07:55 to 07:55, named by its run at 08:00', async () => {
    const destination = await createDestination({
      frequency: 'daily',
      schedule: { hour: 8, minute: 0 },
      startFromMs: DAY0 - 4 * HOUR_MS - 5 * MINUTE_MS,
    });

    await runUntilDone(destination, DAY0 + 8 * HOUR_MS);

    expect(await listKeys(destination.pathPrefix)).toEqual([expectedKey(destination, DAY0 + 8 * HOUR_MS)]);
    const inDay = recorded.filter((ms) => ms <= DAY0 + 7 * HOUR_MS + 55 * MINUTE_MS - 1).length;
    expect(await duckdbCount(destination)).toEqual({ rows: inDay, hours: 1 });
    const stored = await controlStore.getDestination(workspaceId, destination.id);
    expect(stored?.nextRunAt).toBe(new Date(DAY0 + DAY_MS + 8 * HOUR_MS).toISOString());
  }, 120_000);

  it('a change from date to run_hour applies from the next planned window', async () => {
    const destination = await createDestination({ layout: 'date', startFromMs: DAY0 - 1 });
    await runUntilDone(destination, DAY0 + 4 * HOUR_MS + 3 * MINUTE_MS);
    await controlStore.updateDestination(
      workspaceId,
      destination.id,
      { layout: 'run_hour', schedule: { minute: 5 } },
      { bumpConfigVersion: false, now: new Date(DAY0 + 4 * HOUR_MS + 4 * MINUTE_MS) },
    );

    await runUntilDone(destination, DAY0 + 10 * HOUR_MS + 5 * MINUTE_MS);

    const keys = await listKeys(destination.pathPrefix);
    const dated = keys.filter((key) => key.includes('/sms_events/date='));
    // The recipes were written again for the new layout
    const duckdb = (
      await readBytes(`${destination.pathPrefix}/_sluice/schema/sms_events/duckdb.sql`)
    ).toString();
    expect(duckdb).toContain('/v1/schema_type=sms_events/**/*.parquet');
    expect(dated).toHaveLength(4);
    expect(keys.filter((key) => !dated.includes(key))).toEqual(
      Array.from({ length: 6 }, (_, h) =>
        expectedKey(destination, DAY0 + (h + 5) * HOUR_MS + 5 * MINUTE_MS),
      ).sort(),
    );
  }, 120_000);
});
