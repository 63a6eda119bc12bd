import { randomUUID } from 'node:crypto';
import { ControlStore, CursorStore, LeaseStore, progressKey, RunStore } from '@sluice/control';
import { eventFileKey, type EventDataset, newDestination, spanWindows, windowKey } from '@sluice/core';
import { type EventSource, EventLogReader, EventLogWriter, generateEvents } from '@sluice/eventlog';
import { SecretSealer } from '@sluice/secrets';
import { beforeAll, describe, expect, it } from 'vitest';
import { type BucketWriterFactory, createBucketWriterFactory, type EngineDeps } from './deps.js';
import {
  LOCAL_BUCKET,
  LOCAL_S3_ENDPOINT,
  listKeys,
  readBytes,
  readLines,
} from './local-bucket.test-support.js';
import type { RunRef, WorkItem } from './payloads.js';
import { writeWindow } from './write.js';
import { controlTable, eventTables, kmsKey, localBucketOrigins } from '../../../test/helpers/tables.js';

/**
 * A span of sub-hour windows is read from the event log in one pass and cut into windows by recorded time;
 * a window's completion and the next window's first file are saved together. What must hold all the same:
 * one window's rows per file, no file for an empty window, and files that a retry rewrites byte for byte.
 */

const QUARTER_MS = 15 * 60_000;
const HOUR_START = Math.floor(Date.now() / 3_600_000) * 3_600_000 - 3 * 3_600_000;
const workspaceId = `ws_${randomUUID()}`;
const dataset: EventDataset = 'email_events';
const sealer = new SecretSealer(kmsKey);
const cursors = new CursorStore(controlTable);
const controlStore = new ControlStore(controlTable);
/** Four 15-minute windows of one hour: rows in the first, second and fourth, none in the third. */
const item: Extract<WorkItem, { kind: 'events' }> = {
  dataset,
  kind: 'events',
  fromMs: HOUR_START - 1,
  toMs: HOUR_START + 4 * QUARTER_MS - 1,
  stepMs: QUARTER_MS,
};
const windows = spanWindows(item);
const ROWS_PER_WINDOW = [40, 25, 0, 10];

/** Events in each window, the last of a window at its very end (`toMs` is inclusive). */
async function ingest(): Promise<void> {
  const writer = new EventLogWriter({ ...eventTables, explicitRecordedAt: 'unchecked' });
  for (const [index, window] of windows.entries()) {
    const count = ROWS_PER_WINDOW[index] as number;
    if (count === 0) continue;
    const events = generateEvents({
      count,
      workspaceId,
      seed: index + 1,
      from: window.fromMs,
      to: window.toMs,
      mix: { [dataset]: 1 },
    });
    const { accepted } = await writer.ingestEvents(workspaceId, [...events] as unknown as Record<
      string,
      unknown
    >[]);
    if (accepted !== count) throw new Error(`ingested ${accepted} events of ${count}`);
  }
}

/** A destination and a run holding its lease. */
async function leasedRun(): Promise<RunRef> {
  const id = `exp_${randomUUID().replaceAll('-', '')}`;
  const destination = await controlStore.createDestination({
    ...newDestination({
      workspaceId,
      id,
      name: 'Span read test',
      provider: 's3',
      bucket: LOCAL_BUCKET,
      region: 'us-east-1',
      endpoint: LOCAL_S3_ENDPOINT,
      pathPrefix: `span-read-test/${id}`,
      accessKeyId: 'S3RVER',
      secret: await sealer.seal('S3RVER', { workspaceId, destinationId: id }),
      datasets: [dataset],
      frequency: 'every_15_minutes',
      startFrom: new Date(item.fromMs).toISOString(),
      now: new Date(item.fromMs),
    }),
    status: 'idle',
    manualRunQueued: false,
  });
  const runId = `run_${randomUUID().slice(0, 8)}`;
  const lease = await new LeaseStore(controlTable).claim({
    workspaceId,
    destinationId: id,
    runId,
    token: randomUUID(),
    startedAt: new Date().toISOString(),
    nowMs: Date.now(),
    durationMs: 3_600_000,
  });
  if (lease === undefined) throw new Error('the test destination is leased');
  return {
    workspaceId,
    destinationId: id,
    runId,
    startedAt: lease.startedAt,
    leaseToken: lease.token,
    configVersion: destination.configVersion,
    deadlineMs: Date.now() + 3_600_000,
  };
}

/** The real reader, counting its readWindow calls. */
function countingSource(): { source: EventSource; calls: () => number } {
  const reader = new EventLogReader(eventTables);
  let calls = 0;
  return {
    source: {
      readWindow: (...args) => {
        calls += 1;
        return reader.readWindow(...args);
      },
      hasRowsAfter: (...args) => reader.hasRowsAfter(...args),
      readSubscribers: (...args) => reader.readSubscribers(...args),
    },
    calls: () => calls,
  };
}

/** The S3 writer with the local bucket exempt from the endpoint rules. */
const localBucketWriterFactory = createBucketWriterFactory({ allowedEndpoints: localBucketOrigins });

function deps(overrides: Partial<EngineDeps>): Partial<EngineDeps> {
  return {
    controlStore,
    cursors,
    leases: new LeaseStore(controlTable),
    runs: new RunStore(controlTable),
    sealer,
    bucketWriterFactory: localBucketWriterFactory,
    metrics: { recordRun: () => undefined, recordExpiredRows: () => undefined },
    ...overrides,
  };
}

describe('writeWindow over a span of 15-minute windows', () => {
  beforeAll(ingest);

  it('reads the span once and writes one file per window with rows, each holding only its window', async () => {
    // Prepare
    const run = await leasedRun();
    const { source, calls } = countingSource();

    // Act
    const result = await writeWindow({ run, item }, deps({ eventSource: source }));

    // Assess
    expect(calls()).toBe(1);
    expect(result).toMatchObject({ status: 'written', rows: 75, files: 3, doneThroughMs: item.toMs });
    const prefix = `span-read-test/${run.destinationId}`;
    const expected = windows
      .filter((_, index) => (ROWS_PER_WINDOW[index] as number) > 0)
      .map((window) => eventFileKey(prefix, dataset, window, 0));
    expect(await listKeys(prefix)).toEqual([...expected].sort());
    for (const [index, window] of windows.entries()) {
      if (ROWS_PER_WINDOW[index] === 0) continue;
      const times = (await readLines(eventFileKey(prefix, dataset, window, 0))).map((line) =>
        Date.parse((JSON.parse(line) as { recorded_at: string }).recorded_at),
      );
      expect(times).toHaveLength(ROWS_PER_WINDOW[index] as number);
      expect(times.every((ms) => ms > window.fromMs && ms <= window.toMs)).toBe(true);
    }
    const progress = await cursors.getProgress(workspaceId, run.destinationId);
    for (const [index, window] of windows.entries()) {
      const saved = progress.get(progressKey(dataset, windowKey(window)));
      if (ROWS_PER_WINDOW[index] === 0) expect(saved).toBeUndefined();
      else expect(saved).toMatchObject({ done: true, rows: ROWS_PER_WINDOW[index], files: 1, maxFile: 0 });
    }
  });

  it('a writer that fails after saving a window with the next one begun: the retry writes the same bytes', async () => {
    // Prepare: a clean pass for the reference bytes, then a run whose upload of the second window fails
    const clean = await leasedRun();
    await writeWindow({ run: clean, item }, deps({ eventSource: new EventLogReader(eventTables) }));
    const run = await leasedRun();
    const second = eventFileKey(`span-read-test/${run.destinationId}`, dataset, windows[1]!, 0);
    const failing: BucketWriterFactory = (location, credentials) => {
      const writer = localBucketWriterFactory(location, credentials);
      return {
        ...writer,
        writeFile: async (key, lines, options) => {
          if (key === second) throw Object.assign(new Error('connection reset'), { name: 'TimeoutError' });
          return writer.writeFile(key, lines, options);
        },
      };
    };

    // Act
    const failed = await writeWindow(
      { run, item },
      deps({ eventSource: new EventLogReader(eventTables), bucketWriterFactory: failing }),
    ).then(
      () => undefined,
      (error: unknown) => error,
    );
    const begun = (await cursors.getProgress(workspaceId, run.destinationId)).get(
      progressKey(dataset, windowKey(windows[1]!)),
    );
    const retried = await writeWindow({ run, item }, deps({ eventSource: new EventLogReader(eventTables) }));

    // Assess
    expect(failed).toBeInstanceOf(Error);
    expect(begun).toMatchObject({ done: false, nextFile: 0, maxFile: 0 });
    expect(retried).toMatchObject({ status: 'written', files: 2, rows: 35 });
    const cleanPrefix = `span-read-test/${clean.destinationId}`;
    const prefix = `span-read-test/${run.destinationId}`;
    const keys = await listKeys(prefix);
    expect(keys.map((key) => key.slice(prefix.length))).toEqual(
      (await listKeys(cleanPrefix)).map((key) => key.slice(cleanPrefix.length)),
    );
    for (const key of keys) {
      expect(await readBytes(key)).toEqual(await readBytes(`${cleanPrefix}${key.slice(prefix.length)}`));
    }
  });
});
