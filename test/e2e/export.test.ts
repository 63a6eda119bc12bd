import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import {
  eventFileKey,
  type Manifest,
  manifestKey,
  MAX_LINES_PER_FILE,
  gridStartOf,
  spanWindows,
  snapshotFileKey,
  snapshotSuccessKey,
  splitAtBoundaries,
  startOfUtcDay,
  utcDate,
  type Window,
} from '@sluice/core';
import type { SubscriberRow } from '@sluice/core';
import { EventLogReader, type GeneratedEvent, generateEvents, generateSubscribers } from '@sluice/eventlog';
import { SecretSealer } from '@sluice/secrets';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalWorkflows } from '@sluice/devstack';
import { eventTables, kmsKey, localBucketOrigins } from '../helpers/tables.js';
import { type E2eHarness, ingestAll, startE2eHarness, uniqueId } from './harness.js';

// biome-ignore lint/suspicious/noExplicitAny: response bodies, already checked against the OpenAPI by the client
type Json = Record<string, any>;

const MINUTE_MS = 60_000;
const HOUR_MS = 60 * MINUTE_MS;

let h: E2eHarness;
let workflows: LocalWorkflows;
const taskErrors: string[] = [];
const payloads: string[] = [];

let data: {
  midnight: number;
  startFromMs: number;
  before: GeneratedEvent[];
  after: GeneratedEvent[];
  custom: GeneratedEvent[];
  subscribers: SubscriberRow[];
};

beforeAll(async () => {
  h = await startE2eHarness();
  workflows = await h.workflows({
    log: (line) => taskErrors.push(line),
    // Every task input and output, to check that no row and no secret travels in a payload.
    intercept: async (state, input, invoke) => {
      const output = await invoke(input);
      payloads.push(`${state} ${JSON.stringify(input)} ${JSON.stringify(output)}`);
      return output;
    },
  });
  // The latest UTC midnight at least an hour ago; 51,000 email events in the hour before it (one hourly
  // window, two files), 1,500 after it, 400 custom events on both sides, 250 subscribers.
  // (At least 65 minutes ago: the hour after it is then complete and older than the export lag.)
  const midnight = startOfUtcDay(Date.now() - HOUR_MS - 5 * MINUTE_MS);
  const ws = h.ws.workspaceId;
  const events = (
    count: number,
    seed: number,
    from: number,
    to: number,
    dataset: 'email_events' | 'custom_events',
  ) => [...generateEvents({ count, workspaceId: ws, seed, from, to, mix: { [dataset]: 1 } })];
  data = {
    midnight,
    startFromMs: midnight - 12 * HOUR_MS,
    before: events(51_000, 1, midnight - HOUR_MS, midnight - MINUTE_MS, 'email_events'),
    after: events(1_500, 2, midnight, midnight + 30 * MINUTE_MS, 'email_events'),
    custom: events(400, 3, midnight - 3 * HOUR_MS, midnight + 30 * MINUTE_MS, 'custom_events'),
    subscribers: [...generateSubscribers({ count: 250, workspaceId: ws })],
  };
  const all = [...data.before, ...data.after, ...data.custom];
  expect(await ingestAll(h.events, ws, all as unknown as Record<string, unknown>[])).toBe(all.length);
  expect((await h.events.upsertSubscribers(ws, data.subscribers)).accepted).toBe(250);
}, 600_000);

afterAll(async () => {
  expect(await h.close()).toEqual([]);
});

/** Runs Dispatch until a tick starts no run for the destination; returns that destination's runs. */
async function tickUntilCaughtUp(destinationId: string) {
  const runs = [];
  for (let tick = 0; tick < 10; tick++) {
    const outcome = await workflows.runDispatch();
    const ours = outcome.runs.filter((run) => (run.input as Json).destinationId === destinationId);
    if (ours.length === 0 && tick > 0) return runs;
    runs.push(...ours);
  }
  throw new Error('the destination did not catch up in 10 ticks');
}

/** The schema objects the first run writes beside the data, per dataset (`_sluice/schema/<dataset>/`). */
function schemaKeys(prefix: string, datasets: readonly string[]): string[] {
  const names = [
    'athena.sql',
    'bigquery.sql',
    'databricks.py',
    'duckdb.sql',
    'glue.txt',
    'schema.json',
    'snowflake.sql',
  ];
  return datasets.flatMap((dataset) => names.map((name) => `${prefix}/_sluice/schema/${dataset}/${name}`));
}

describe('a whole export on the local runtime, through the synthesized state machines', () => {
  it('exports events across a UTC midnight and a window over 50,000 rows, exactly once, with the snapshot', async () => {
    // Prepare: an export of everything, from 12 hours before that midnight.
    const { midnight, startFromMs, before, after, custom, subscribers } = data;
    const all = [...before, ...after, ...custom];
    const prefix = uniqueId('e2e/');
    const created = await h.ws.client.post<Json>(
      '/data-exports',
      h.api.createBody({
        pathPrefix: prefix,
        startFrom: new Date(startFromMs).toISOString(),
        datasets: ['email_events', 'custom_events', 'subscribers'],
        frequency: 'hourly',
      }),
    );
    expect(created.status).toBe(201);
    const id: string = created.body.dataExport.id;

    // Act
    const runs = await tickUntilCaughtUp(id);

    // Assess: the runs
    expect(runs.map((run) => run.status)).toEqual(runs.map(() => 'succeeded'));
    expect(runs.length).toBeGreaterThanOrEqual(1);
    const view = (await h.ws.client.get<Json>(`/data-exports/${id}`)).body.dataExport;
    expect(view).toMatchObject({ status: 'idle', consecutiveFailures: 0, lastError: null });
    const throughMs = Date.parse(view.exportedThrough.email_events);
    expect(Date.parse(view.exportedThrough.custom_events)).toBe(throughMs);
    expect(throughMs).toBeGreaterThan(midnight + 30 * MINUTE_MS);
    expect(throughMs).toBeLessThanOrEqual(Date.now() - 2 * MINUTE_MS);
    const today = utcDate(Date.now());
    expect(view.exportedThrough.subscribers.slice(0, 10)).toBe(today);

    // Assess: exactly the expected objects
    const objects = await h.list(prefix);
    // The hourly grid's windows from the start (toMs inclusive: an hour's window ends on its last
    // millisecond, the next begins after it; the hours include the midnight). A window with no rows writes
    // no file.
    const windows = splitAtBoundaries(gridStartOf(startFromMs, HOUR_MS), throughMs, HOUR_MS);
    const big = { fromMs: midnight - HOUR_MS - 1, toMs: midnight - 1 };
    expect(windows).toContainEqual(big);
    expect(windows).toContainEqual({
      fromMs: midnight - 1,
      toMs: Math.min(midnight + HOUR_MS - 1, throughMs),
    });
    const windowOfKey = new Map<string, Window>();
    const manifestKeys = new Map<string, string[]>();
    for (const [dataset, rows] of [
      ['email_events', [...before, ...after]],
      ['custom_events', custom],
    ] as const) {
      for (const window of windows) {
        const n = rows.filter((row) => {
          const recorded = Date.parse(row.recorded_at!);
          return recorded > window.fromMs && recorded <= window.toMs;
        }).length;
        for (let part = 0; part * MAX_LINES_PER_FILE < n; part++) {
          windowOfKey.set(eventFileKey(prefix, dataset, window, part), window);
          const manifest = manifestKey(prefix, dataset, window);
          manifestKeys.set(manifest, [
            ...(manifestKeys.get(manifest) ?? []),
            eventFileKey(prefix, dataset, window, part),
          ]);
        }
      }
    }
    const expectedKeys = [
      `${prefix}/_sluice/connection-test.json`,
      ...manifestKeys.keys(),
      ...windowOfKey.keys(),
      snapshotFileKey(prefix, today, 0),
      snapshotSuccessKey(prefix, today),
      // The schema and reading recipes of each dataset, beside the data
      ...schemaKeys(prefix, ['email_events', 'custom_events', 'subscribers']),
    ].sort();
    expect(objects.map((o) => o.key)).toEqual(expectedKeys);
    const dataKeys = expectedKeys.filter((key) => !key.includes('/_sluice/'));
    const emailKeys = dataKeys.filter((key) => key.includes('/email_events/'));
    const customKeys = dataKeys.filter((key) => key.includes('/custom_events/'));
    expect(emailKeys).toEqual(
      [
        eventFileKey(prefix, 'email_events', big, 0),
        eventFileKey(prefix, 'email_events', big, 1),
        eventFileKey(prefix, 'email_events', windows.find((w) => w.fromMs === midnight - 1)!, 0),
      ].sort(),
    );
    expect(customKeys).toHaveLength(4); // the three hours before the midnight and the one after it
    for (const part of ['0000', '0001'])
      expect(emailKeys).toContain(
        `${prefix}/email_events/date=${utcDate(midnight - 1)}/email_events-${midnight - HOUR_MS - 1}-${midnight - 1}-${part}.jsonl.gz`,
      );

    // Assess: line counts, order, every row once, each in its window
    const seen = new Map<string, number>();
    let lineTotal = 0;
    for (const key of dataKeys.filter((k) => k.includes('_events/'))) {
      const lines = await h.readLines(key);
      const window = windowOfKey.get(key)!;
      let previous = Number.NEGATIVE_INFINITY;
      for (const line of lines) {
        const row = JSON.parse(line) as { id: string; recorded_at: string; schema_version: number };
        const recorded = Date.parse(row.recorded_at);
        expect(recorded).toBeGreaterThanOrEqual(previous);
        expect(recorded > window.fromMs && recorded <= window.toMs).toBe(true);
        expect(row.schema_version).toBe(1);
        previous = recorded;
        seen.set(row.id, (seen.get(row.id) ?? 0) + 1);
      }
      lineTotal += lines.length;
    }
    expect(
      (
        await h.readLines(
          expectedKeys.find(
            (k) => k.endsWith('-0000.jsonl.gz') && k.includes(`email_events-${big.fromMs}-`),
          )!,
        )
      ).length,
    ).toBe(MAX_LINES_PER_FILE);
    expect(lineTotal).toBe(all.length);
    expect(seen.size).toBe(all.length);
    expect([...seen.values()].every((n) => n === 1)).toBe(true);
    expect(all.every((event) => seen.has(event.id))).toBe(true);
    const snapshot = await h.readLines(snapshotFileKey(prefix, today, 0));
    expect(new Set(snapshot.map((line) => (JSON.parse(line) as { id: string }).id))).toEqual(
      new Set(subscribers.map((s) => s.id)),
    );
    // Assess: each window's manifest (and the snapshot's `_SUCCESS`) lists exactly its files, as stored
    const manifests = [
      ...manifestKeys,
      [snapshotSuccessKey(prefix, today), [snapshotFileKey(prefix, today, 0)]],
    ] as const;
    for (const [key, files] of manifests) {
      const manifest = JSON.parse((await h.readBytes(key)).toString('utf8')) as Manifest;
      expect(manifest).toMatchObject({ manifest_version: 1, schema_version: 1, format: 'jsonl' });
      expect(manifest.files.map((file) => file.key)).toEqual(files);
      for (const file of manifest.files) {
        const stored = await h.readBytes(file.key);
        expect(file.bytes).toBe(objects.find((o) => o.key === file.key)!.size);
        expect(file.sha256).toBe(createHash('sha256').update(stored).digest('hex'));
        expect(file.rows).toBe((await h.readLines(file.key)).length);
      }
    }
    const success = objects.find((o) => o.key.endsWith('/_SUCCESS'))!;
    const snapshotFile = objects.find((o) => o.key === snapshotFileKey(prefix, today, 0))!;
    expect(success.lastModified).toBeGreaterThanOrEqual(snapshotFile.lastModified);

    // Assess: the run record agrees with the files
    const records = (await h.ws.client.get<Json>(`/data-exports/${id}/runs`)).body.runs as Json[];
    const succeeded = records.filter((r) => r.status === 'succeeded');
    expect(succeeded).toHaveLength(runs.length);
    const dataFiles = objects.filter((o) => o.key.endsWith('.jsonl.gz'));
    const sum = (key: string) => succeeded.reduce((total, r) => total + (r[key] as number), 0);
    expect(sum('rowCount')).toBe(all.length + subscribers.length);
    expect(sum('fileCount')).toBe(dataFiles.length);
    expect(sum('byteCount')).toBe(dataFiles.reduce((total, o) => total + o.size, 0));
    const stats = succeeded[0]!.stats as Json;
    expect(stats.email_events).toMatchObject({
      rows: before.length + after.length,
      files: 3,
      fromMs: startFromMs - 1,
      toMs: throughMs,
    });
    expect(stats.custom_events).toMatchObject({
      rows: custom.length,
      files: customKeys.length,
      fromMs: startFromMs - 1,
      toMs: throughMs,
    });
    expect(view.totalRowsExported).toBe(all.length + subscribers.length);

    // Assess: DuckDB reads the files with the reference's query, and the counts are what went in
    const dir = await mkdtemp(join(tmpdir(), 'sluice-e2e-'));
    try {
      await h.download(prefix, dir);
      const duck = await DuckDBInstance.create(':memory:');
      const connection = await duck.connect();
      const reader = await connection.runAndReadAll(
        `SELECT event_type, COUNT(DISTINCT id)::INTEGER AS n, COUNT(*)::INTEGER AS total
         FROM read_json_auto('${dir}/email_events/*/*.jsonl.gz', hive_partitioning = true)
         GROUP BY event_type ORDER BY event_type`,
      );
      const counted = Object.fromEntries(
        reader.getRowObjects().map((row) => [String(row.event_type), Number(row.n)]),
      );
      const totals = reader.getRowObjects().reduce((t, row) => t + Number(row.total), 0);
      const expected: Record<string, number> = {};
      for (const event of [...before, ...after]) {
        const type = (event as { event_type: string }).event_type;
        expected[type] = (expected[type] ?? 0) + 1;
      }
      expect(counted).toEqual(expected);
      expect(totals).toBe(before.length + after.length);
      const dates = await connection.runAndReadAll(
        `SELECT CAST(date AS VARCHAR) AS d, COUNT(*)::INTEGER AS n
         FROM read_json_auto('${dir}/email_events/*/*.jsonl.gz', hive_partitioning = true) GROUP BY d ORDER BY d`,
      );
      expect(dates.getRowObjects().map((row) => [row.d, row.n])).toEqual([
        [utcDate(midnight - 1), before.length],
        [utcDate(midnight), after.length],
      ]);
      connection.closeSync();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }

    // Assess: payloads carried ids, windows and counts only
    expect(payloads.length).toBeGreaterThan(5);
    const sampleIds = [before[0]!.id, after[0]!.id, custom[0]!.id, subscribers[0]!.id];
    for (const payload of payloads) {
      expect(payload).not.toContain('S3RVER');
      expect(payload).not.toContain('"line"');
      for (const rowId of sampleIds) expect(payload).not.toContain(rowId);
      // A few hundred bytes per window or result at most (a row alone is about 600 bytes).
      const windowsInPayload = payload.split('"kind"').length - 1;
      expect(payload.length).toBeLessThan(2_000 + 300 * windowsInPayload);
    }

    // Assess: nothing is due any more (the next tick starts no run) and no task error was logged
    expect(Date.parse(view.nextRunAt)).toBeGreaterThan(Date.now());
    expect(taskErrors).toEqual([]);
  }, 600_000);

  it('a writer failing after its first file: the retry rewrites the same names, the cursor waits', async () => {
    // Prepare: a second export of the same events; its first window's writer fails in its second file.
    const engine = await import('@sluice/engine');
    const { midnight, startFromMs } = data;
    const prefix = uniqueId('e2e-fail/');
    const created = await h.ws.client.post<Json>(
      '/data-exports',
      h.api.createBody({
        pathPrefix: prefix,
        startFrom: new Date(startFromMs).toISOString(),
        datasets: ['email_events'],
        frequency: 'hourly',
      }),
    );
    const id: string = created.body.dataExport.id;
    // The hourly window before the midnight: the one with more than 50,000 rows.
    const window0 = { fromMs: midnight - HOUR_MS - 1, toMs: midnight - 1 };
    const file0 = eventFileKey(prefix, 'email_events', window0, 0);
    const file1 = eventFileKey(prefix, 'email_events', window0, 1);
    const uploads = { created: 0, finished: 0 };
    let attempts = 0;
    let firstPlan: Json | undefined;
    const failing = await h.workflows({
      retryIntervalOverrides: { WriteWindow: 0 },
      intercept: async (state, input, invoke) => {
        if (state === 'ClaimAndPlan') {
          const plan = await invoke(input);
          firstPlan = plan as Json;
          return plan;
        }
        const item = (input as Json).item as Json | undefined;
        const covers = (item?.fromMs as number) <= window0.fromMs && window0.toMs <= (item?.toMs as number);
        if (state !== 'WriteWindow' || !covers) return invoke(input);
        attempts += 1;
        // The real writer, with a bucket connection that breaks 500 lines into the second file (of 1,000).
        const writerFactory = engine.createBucketWriterFactory({ allowedEndpoints: localBucketOrigins });
        const factory: typeof engine.defaultBucketWriterFactory = (location, credentials) => {
          const real = writerFactory(location, credentials);
          return {
            ...real,
            writeFile: (key, lines, options) => {
              // Every attempt at file 1 breaks (a retry resumes there, after file 0).
              if (key !== file1) return real.writeFile(key, lines, options);
              uploads.created += 1;
              return real.writeFile(key, breakAfter(lines, 500), options).finally(() => {
                uploads.finished += 1;
              });
            },
          };
        };
        return (await engine.writeWindow(input as never, {
          controlStore: h.store,
          cursors: h.cursors,
          sealer: new SecretSealer(kmsKey),
          eventSource: new EventLogReader(eventTables),
          bucketWriterFactory: factory,
        })) as never;
      },
    });

    // Act 1: the failing run
    const first = await failing.runExportRun({
      workspaceId: h.ws.workspaceId,
      destinationId: id,
      trigger: 'manual',
    });

    // Assess 1: failed, recorded; file 0 whole, file 1 absent; the cursor did not pass the window
    expect(first.status).toBe('failed');
    expect(attempts).toBeGreaterThan(1); // a transient failure, retried inside the run
    const afterFailure = await h.list(prefix);
    expect(afterFailure.map((o) => o.key)).toContain(file0);
    expect(afterFailure.map((o) => o.key)).not.toContain(file1);
    expect(afterFailure.map((o) => o.key)).not.toContain(manifestKey(prefix, 'email_events', window0));
    expect(uploads.finished).toBe(uploads.created);
    const bytes0 = await h.readBytes(file0);
    let view = (await h.ws.client.get<Json>(`/data-exports/${id}`)).body.dataExport;
    const stoppedAt = view.exportedThrough.email_events as string | null;
    expect(stoppedAt === null || Date.parse(stoppedAt) <= window0.fromMs).toBe(true);
    expect(view).toMatchObject({ status: 'failed', consecutiveFailures: 1 });
    expect(typeof view.lastError).toBe('string');

    // Act 2: the next run, with the real writer
    const second = await workflows.runExportRun({
      workspaceId: h.ws.workspaceId,
      destinationId: id,
      trigger: 'manual',
    });

    // Assess 2: the same names, file 0 byte-identical, every row once
    expect(second.status).toBe('succeeded');
    const windowsOf = (plan: Json | undefined) =>
      ((plan?.items ?? []) as Json[]).flatMap((item) =>
        spanWindows({
          fromMs: item.fromMs as number,
          toMs: item.toMs as number,
          ...(typeof item.stepMs === 'number' ? { stepMs: item.stepMs } : {}),
        }),
      );
    const planned1 = windowsOf(firstPlan);
    const planned2 = windowsOf((second.output as Json).plan);
    expect(planned1[0]).toEqual({ fromMs: startFromMs - 1, toMs: startFromMs + HOUR_MS - 1 });
    expect(planned1).toContainEqual(window0);
    const afterMidnight = planned1.find((w) => w.fromMs === midnight - 1)!;
    const objects = await h.list(prefix);
    view = (await h.ws.client.get<Json>(`/data-exports/${id}`)).body.dataExport;
    const throughMs = Date.parse(view.exportedThrough.email_events);
    expect(objects.map((o) => o.key)).toEqual(
      [
        `${prefix}/_sluice/connection-test.json`,
        manifestKey(prefix, 'email_events', window0),
        manifestKey(prefix, 'email_events', afterMidnight),
        file0,
        file1,
        eventFileKey(prefix, 'email_events', afterMidnight, 0),
        ...schemaKeys(prefix, ['email_events']),
      ].sort(),
    );
    // The window written by two runs: its manifest lists the first run's file too, as stored
    const resumedManifest = JSON.parse(
      (await h.readBytes(manifestKey(prefix, 'email_events', window0))).toString('utf8'),
    ) as Manifest;
    expect(resumedManifest.files).toEqual([
      {
        key: file0,
        rows: MAX_LINES_PER_FILE,
        bytes: bytes0.length,
        sha256: createHash('sha256').update(bytes0).digest('hex'),
      },
      expect.objectContaining({ key: file1 }),
    ]);
    // The second run went on from where the first committed, over the very windows the first planned (the
    // same names: the grid's), then on to now.
    const resumedAt = planned1.findIndex((w) => w.fromMs === planned2[0]?.fromMs);
    expect(resumedAt).toBeGreaterThanOrEqual(0);
    expect(planned2.slice(0, planned1.length - resumedAt)).toEqual(planned1.slice(resumedAt));
    expect(throughMs).toBeGreaterThanOrEqual(planned1.at(-1)!.toMs);
    expect((await h.readBytes(file0)).equals(bytes0)).toBe(true);
    const ids = new Set<string>();
    let lines = 0;
    for (const object of objects.filter((o) => o.key.endsWith('.jsonl.gz'))) {
      for (const line of await h.readLines(object.key)) {
        ids.add((JSON.parse(line) as { id: string }).id);
        lines += 1;
      }
    }
    expect(ids.size).toBe(lines);
    expect(view).toMatchObject({ status: 'idle', consecutiveFailures: 0 });
  }, 600_000);
});

/** Yields `count` lines of `lines`, then fails as a dropped connection would. */
async function* breakAfter(
  lines: AsyncIterable<string> | Iterable<string>,
  count: number,
): AsyncGenerator<string> {
  let n = 0;
  for await (const line of lines) {
    if (n === count) throw Object.assign(new Error('socket hang up'), { name: 'Error', code: 'ECONNRESET' });
    n += 1;
    yield line;
  }
}
