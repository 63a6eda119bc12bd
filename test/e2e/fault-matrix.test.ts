import { createHash } from 'node:crypto';
import { QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import {
  DAY_MS,
  type Frequency,
  gridStartOf,
  gridStepMs,
  snapshotFileKey,
  snapshotSuccessKey,
  startOfUtcDay,
  utcDate,
} from '@sluice/core';
import type { BucketWriterFactory } from '@sluice/engine';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type {
  ExportRunOutcome,
  Json as Payload,
  LambdaHandler,
  LocalWorkflows,
  LocalWorkflowsOptions,
} from '@sluice/devstack';
import {
  createLocalExport,
  type E2eHarness,
  ingestAll,
  manualRunInput,
  startE2eHarness,
  uniqueId,
} from './harness.js';
import { localBucketOrigins } from '../helpers/tables.js';

/**
 * The fault matrix of issue 7, end to end: the synthesized ExportRun and Dispatch definitions run by the
 * local runtime (aws-local-stepfunctions) with the real handlers, on DynamoDB Local and the local bucket.
 * Faults are injected by wrapping Task handlers by state name (an interceptor) or the writer's
 * dependencies (its bucket writer), never by faking a store. Each case ends with every row in the bucket
 * exactly once, in the window of its recorded time, a contiguous cursor with nothing left planned or in
 * progress, and nothing `running`: no lease, no running run record.
 */

// biome-ignore lint/suspicious/noExplicitAny: response bodies, already checked against the OpenAPI by the client
type Json = Record<string, any>;
type EventDataset = 'email_events' | 'custom_events';

const MINUTE_MS = 60_000;
const HOUR_MS = 60 * MINUTE_MS;
/** Rows of the big window: over one 50,000-line file, so a writer can stop or die inside the window. */
const BIG_WINDOW_ROWS = 52_000;
const CUSTOM_ROWS = 2_000;
/** Over one file of subscribers, so a retried snapshot can have fewer files than its first attempt. */
const SUBSCRIBERS = 50_600;

let h: E2eHarness;
let workflows: LocalWorkflows;
// At least 65 minutes ago: the hour after it is complete and older than the export lag.
const midnight = startOfUtcDay(Date.now() - HOUR_MS - 5 * MINUTE_MS);
const startFromMs = midnight - 2 * HOUR_MS;
/** The hourly window holding the big window's rows. */
const bigWindow = { fromMs: midnight - 2 * HOUR_MS - 1, toMs: midnight - HOUR_MS - 1 };
/**
 * The hour before the last complete one: a few custom rows there, so a run stopped after its first span still has
 * windows with rows to write (late in the UTC day every earlier custom row fits in the first span).
 */
const lateHour = {
  fromMs: Math.floor(Date.now() / HOUR_MS) * HOUR_MS - 2 * HOUR_MS,
  toMs: Math.floor(Date.now() / HOUR_MS) * HOUR_MS - HOUR_MS,
};
/** Every ingested event: id → dataset and recorded time. */
const ingested = new Map<string, { dataset: EventDataset; recordedMs: number }>();

/** Loaded after the harness set this file's control table (these read it at load). */
let control: typeof import('@sluice/control');
let localBucketWriterFactory: BucketWriterFactory;
let createWriterFunction: typeof import('../../functions/writer/function.js').createWriterFunction;
let readWriterConfig: typeof import('../../functions/writer/config.js').readWriterConfig;

beforeAll(async () => {
  h = await startE2eHarness();
  control = await import('@sluice/control');
  const { createBucketWriterFactory } = await import('@sluice/engine');
  localBucketWriterFactory = createBucketWriterFactory({ allowedEndpoints: localBucketOrigins });
  ({ createWriterFunction } = await import('../../functions/writer/function.js'));
  ({ readWriterConfig } = await import('../../functions/writer/config.js'));
  const { generateEvents } = await import('@sluice/eventlog');
  workflows = await h.workflows();
  const ws = h.ws.workspaceId;
  const events = [
    ...generateEvents({
      count: BIG_WINDOW_ROWS,
      workspaceId: ws,
      seed: 71,
      from: bigWindow.fromMs,
      to: bigWindow.toMs,
      mix: { email_events: 1 },
    }),
    ...generateEvents({
      count: CUSTOM_ROWS,
      workspaceId: ws,
      seed: 72,
      from: startFromMs,
      to: midnight + 20 * MINUTE_MS,
      mix: { custom_events: 1 },
    }),
    ...generateEvents({
      count: 200,
      workspaceId: ws,
      seed: 73,
      from: lateHour.fromMs,
      to: lateHour.toMs,
      mix: { custom_events: 1 },
    }),
  ];
  for (const event of events) {
    ingested.set(event.id, {
      dataset: event.dataset as EventDataset,
      recordedMs: Date.parse(event.recorded_at as string),
    });
  }
  await ingestAll(h.events, ws, events as unknown as Record<string, unknown>[]);
}, 600_000);

afterAll(async () => {
  expect(await h.close()).toEqual([]);
});

// ---------------------------------------------------------------------------------------------------------
// Helpers

const createExport = (datasets: string[], frequency: Frequency = 'hourly') =>
  createLocalExport(h, { prefixRoot: 'e2e-faults/', startFromMs, datasets, frequency });

const input = (destinationId: string) => manualRunInput(h, destinationId);

const view = async (id: string): Promise<Json> =>
  (await h.ws.client.get<Json>(`/data-exports/${id}`)).body.dataExport;

const runRecords = async (id: string): Promise<Json[]> =>
  (await h.ws.client.get<Json>(`/data-exports/${id}/runs`)).body.runs as Json[];

/** The destination of a WriteWindow or Commit payload. */
const destinationOf = (payload: Payload): string => ((payload as Json).run as Json).destinationId as string;

/**
 * Runs Dispatch ticks until one starts no run for the destination. A run that reports `runAgain` (still
 * behind, or out of time) must be started again by the very next tick: that is checked here.
 */
async function tickUntilCaughtUp(runner: LocalWorkflows, destinationId: string): Promise<ExportRunOutcome[]> {
  const runs: ExportRunOutcome[] = [];
  // A writer out of budget still finishes one window an invocation, so a run may move the cursor by one
  // hourly window: the exports start at `startFromMs`, up to 27 windows ago depending on the time of day.
  const maxTicks = Math.ceil((Date.now() - startFromMs) / HOUR_MS) + 6;
  for (let tick = 0; tick < maxTicks; tick++) {
    const outcome = await runner.runDispatch();
    const ours = outcome.runs.filter((run) => (run.input as Json).destinationId === destinationId);
    if (ours.length === 0) {
      expect(runs.at(-1)?.runAgain ?? false).toBe(false);
      return runs;
    }
    expect(ours).toHaveLength(1);
    runs.push(...ours);
  }
  throw new Error(`the destination did not catch up in ${maxTicks} ticks`);
}

/** Moves the destination's lease into the past, as if its 6 minutes had gone by (its holder died). */
async function expireLease(destinationId: string): Promise<void> {
  await control.documentClient.send(
    new UpdateCommand({
      TableName: h.controlTable,
      Key: { PK: control.workspacePk(h.ws.workspaceId), SK: control.leaseSk(destinationId) },
      UpdateExpression: 'SET expiresAtMs = :past',
      ConditionExpression: 'attribute_exists(PK)',
      ExpressionAttributeValues: { ':past': Date.now() - 1_000 },
    }),
  );
}

/** An event file key, parsed: `<prefix>/<dataset>/date=D/<dataset>-<fromMs>-<toMs>-NNNN.jsonl.gz`. */
function parseEventKey(key: string): { dataset: string; fromMs: number; toMs: number; index: number } {
  const match = /\/([a-z_]+)-(\d+)-(\d+)-(\d{4})\.jsonl\.gz$/.exec(key);
  if (!match) throw new Error(`not an event file: ${key}`);
  return {
    dataset: match[1] as string,
    fromMs: Number(match[2]),
    toMs: Number(match[3]),
    index: Number(match[4]),
  };
}

/** sha256 of every event file under a prefix, by its key below the prefix. */
async function hashes(prefix: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const object of await h.list(prefix)) {
    if (!object.key.endsWith('.jsonl.gz') || object.key.includes('/subscribers/')) continue;
    const digest = createHash('sha256')
      .update(await h.readBytes(object.key))
      .digest('hex');
    out.set(object.key.slice(prefix.length), digest);
  }
  return out;
}

/**
 * The end state every case must reach: for each event dataset, the rows recorded in
 * `(start, exportedThrough]` are in the bucket exactly once (over `prefixes`, where a PATCH moved the
 * export), each in the file of the window of its recorded time, files numbered from 0 without a gap; the
 * cursor is on the grid, nothing is left planned or in progress; no lease, no `running` run or status.
 */
async function expectExactlyOnce(
  id: string,
  prefixes: string[],
  datasets: EventDataset[],
  frequency: Frequency = 'hourly',
): Promise<void> {
  const dataExport = await view(id);
  expect(dataExport.status).not.toBe('running');
  expect(await h.leases.get(h.ws.workspaceId, id)).toBeUndefined();
  expect((await runRecords(id)).filter((run) => run.status === 'running')).toEqual([]);
  const cursors = await h.cursors.get(h.ws.workspaceId, id);
  expect([...(await h.cursors.getProgress(h.ws.workspaceId, id)).values()]).toEqual([]);
  const stepMs = gridStepMs(frequency);
  for (const dataset of datasets) {
    const throughMs = Date.parse(dataExport.exportedThrough[dataset]);
    expect((throughMs + 1) % stepMs).toBe(0);
    expect(cursors.get(dataset)?.exportedThroughMs).toBe(throughMs);
    expect(cursors.get(dataset)?.plannedSpans ?? []).toEqual([]);
    const startMs = gridStartOf(startFromMs, stepMs);
    const expected = [...ingested]
      .filter(([, row]) => row.dataset === dataset && row.recordedMs > startMs && row.recordedMs <= throughMs)
      .map(([rowId]) => rowId);
    expect(expected.length).toBeGreaterThan(0);
    const seen = new Map<string, number>();
    const indexes = new Map<string, number[]>();
    for (const prefix of prefixes) {
      const keys = (await h.list(`${prefix}/${dataset}`)).map((o) => o.key);
      for (const key of keys) {
        const file = parseEventKey(key);
        expect(file.dataset).toBe(dataset);
        const window = `${prefix}|${file.fromMs}-${file.toMs}`;
        indexes.set(window, [...(indexes.get(window) ?? []), file.index]);
        for (const line of await h.readLines(key)) {
          const row = JSON.parse(line) as { id: string; recorded_at: string };
          const recordedMs = Date.parse(row.recorded_at);
          expect(recordedMs > file.fromMs && recordedMs <= file.toMs).toBe(true);
          seen.set(row.id, (seen.get(row.id) ?? 0) + 1);
        }
      }
    }
    for (const numbers of indexes.values())
      expect(numbers.sort((a, b) => a - b)).toEqual(numbers.map((_, i) => i));
    expect(seen.size).toBe(expected.length);
    expect(expected.every((rowId) => seen.get(rowId) === 1)).toBe(true);
  }
}

/** Replaces the run's budget: its writers start no file after the first of each invocation. */
const noBudget: LocalWorkflowsOptions['intercept'] = async (state, payload, invoke) => {
  const output = await invoke(payload);
  const run = (output as Json | null)?.run as Json | undefined;
  if (state === 'ClaimAndPlan' && run !== undefined) run.deadlineMs = Date.now();
  return output;
};

/** A bucket writer that dies (as a Lambda whose process exits) right after the upload `shouldDie` picks. */
function dyingBucketWriter(shouldDie: (key: string) => Promise<boolean> | boolean): BucketWriterFactory {
  return (location, credentials) => {
    const real = localBucketWriterFactory(location, credentials);
    return {
      ...real,
      async writeFile(key, lines, options) {
        const file = await real.writeFile(key, lines, options);
        if (await shouldDie(key)) {
          const error = new Error('The worker process exited before it returned.');
          error.name = 'Lambda.Unknown';
          throw error;
        }
        return file;
      },
    };
  };
}

/** Local workflows whose writer is the real handler over a wrapped bucket writer. */
async function workflowsWithBucket(
  factory: BucketWriterFactory,
  options: Omit<LocalWorkflowsOptions, 'definitions' | 'functions'> = {},
): Promise<LocalWorkflows> {
  const writer = createWriterFunction(readWriterConfig(process.env), {
    allowedEndpoints: localBucketOrigins,
    overrides: { bucketWriterFactory: factory },
  });
  return h.workflows({ ...options, functions: { writer: writer as LambdaHandler } });
}

/** One-pass files of the big window (an export with no fault at all), computed once. */
let onePass: Promise<Map<string, string>> | undefined;
function onePassHashes(): Promise<Map<string, string>> {
  onePass ??= (async () => {
    const { id, prefix } = await createExport(['email_events']);
    const runs = await tickUntilCaughtUp(workflows, id);
    expect(runs.map((run) => [run.status, run.error, run.reason])).toEqual(
      runs.map(() => ['succeeded', undefined, undefined]),
    );
    return hashes(prefix);
  })();
  return onePass;
}

/**
 * A gate for the items of one run: the first planned item is written (and `afterFirst` runs), and every
 * other item waits for that before it starts, so the fault lands between files deterministically.
 */
function firstItemThen(afterFirst: () => Promise<void>): LocalWorkflowsOptions['intercept'] {
  let firstItem: string | undefined;
  let release!: () => void;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  return async (state, payload, invoke) => {
    if (state === 'ClaimAndPlan') {
      const output = await invoke(payload);
      const items = ((output as Json).items ?? []) as Json[];
      if (firstItem === undefined && items.length > 0) firstItem = JSON.stringify(items[0]);
      return output;
    }
    if (state !== 'WriteWindow') return invoke(payload);
    if (JSON.stringify((payload as Json).item) === firstItem) {
      const result = await invoke(payload);
      await afterFirst();
      release();
      return result;
    }
    await released;
    return invoke(payload);
  };
}

// ---------------------------------------------------------------------------------------------------------

describe('the fault matrix on the local state machines and real local parts', () => {
  it('a writer that dies right after uploading file k of a window is retried and continues from its last saved file: the bytes of one pass', async () => {
    // Prepare: the writer dies once after the upload of file 1 of the big window (its last; the window
    // is not yet saved complete), and once after file 0 of the first custom_events window.
    const reference = await onePassHashes();
    const { id, prefix } = await createExport(['email_events', 'custom_events']);
    const deaths: string[] = [];
    const dieAt = new Set(['email_events-0001', 'custom_events-0000']);
    const writes: Payload[] = [];
    const runner = await workflowsWithBucket(
      dyingBucketWriter((key) => {
        const name = /\/([a-z_]+)-\d+-\d+-(\d{4})\.jsonl\.gz$/.exec(key);
        const what = name ? `${name[1]}-${name[2]}` : key;
        if (!dieAt.has(what)) return false;
        dieAt.delete(what);
        deaths.push(key);
        return true;
      }),
      {
        retryIntervalOverrides: { WriteWindow: 0 },
        intercept: async (state, payload, invoke) => {
          if (state === 'WriteWindow' && destinationOf(payload) === id) writes.push(payload);
          return invoke(payload);
        },
      },
    );

    // Act
    const runs = await tickUntilCaughtUp(runner, id);

    // Assess: the deaths happened and were retried inside the run; nothing failed
    expect(deaths).toHaveLength(2);
    expect(runs.map((run) => run.status)).toEqual(runs.map(() => 'succeeded'));
    const items = writes.map((w) => JSON.stringify((w as Json).item));
    expect(items.length).toBe(new Set(items).size + 2); // two items invoked twice: once dead, once retried
    await expectExactlyOnce(id, [prefix], ['email_events', 'custom_events']);
    const email = new Map([...(await hashes(prefix))].filter(([key]) => key.includes('/email_events/')));
    expect(email).toEqual(reference);
    expect(
      [...email.keys()].filter((key) => key.includes(`-${bigWindow.fromMs}-${bigWindow.toMs}-`)),
    ).toHaveLength(2);
  }, 300_000);

  it('a writer out of budget mid-window returns where to continue; the next tick runs the export again at once and the same window continues: the bytes of one pass', async () => {
    // Prepare: every writer invocation of this export starts no file after its first
    const reference = await onePassHashes();
    const { id, prefix } = await createExport(['email_events']);
    const bigItems: Json[] = [];
    const runner = await h.workflows({
      intercept: async (state, payload, invoke) => {
        const output = await noBudget(state, payload, invoke);
        if (state === 'WriteWindow' && destinationOf(payload) === id) {
          const item = (payload as Json).item as Json;
          if (item.fromMs <= bigWindow.fromMs && bigWindow.toMs <= item.toMs) bigItems.push(output as Json);
        }
        return output;
      },
    });

    // Act: Dispatch ticks, as the scheduler runs them
    const runs = await tickUntilCaughtUp(runner, id);

    // Assess: the big window took two invocations (one file each), the first `partial`; runs went on at
    // once (checked by tickUntilCaughtUp); the files are those of one pass
    expect(runs.length).toBeGreaterThan(1);
    expect(runs[0]?.runAgain).toBe(true);
    expect(runs.map((run) => run.status)).toEqual(runs.map(() => 'succeeded'));
    const bigFiles = bigItems.filter((result) => result.files > 0);
    expect(bigFiles.length).toBeGreaterThanOrEqual(2);
    expect(bigFiles[0]?.status).toBe('partial');
    await expectExactlyOnce(id, [prefix], ['email_events']);
    expect(await hashes(prefix)).toEqual(reference);
  }, 300_000);

  it('a daily export of a day larger than one writer budget completes, over several invocations', async () => {
    // Prepare: a daily export from yesterday, its day over one 50,000-line file, writers with no budget
    const { id, prefix } = await createExport(['email_events', 'custom_events'], 'daily');
    const results: Json[] = [];
    const runner = await h.workflows({
      intercept: async (state, payload, invoke) => {
        const output = await noBudget(state, payload, invoke);
        if (state === 'WriteWindow' && destinationOf(payload) === id) results.push(output as Json);
        return output;
      },
    });

    // Act
    const runs = await tickUntilCaughtUp(runner, id);

    // Assess: yesterday is exported whole, its email window written by two invocations
    expect(runs.length).toBeGreaterThanOrEqual(2);
    expect(runs.map((run) => run.status)).toEqual(runs.map(() => 'succeeded'));
    const email = results.filter((r) => r.dataset === 'email_events' && r.files > 0);
    expect(email.map((r) => [r.status, r.files])).toEqual([
      ['partial', 1],
      ['written', 1],
    ]);
    const dataExport = await view(id);
    expect(Date.parse(dataExport.exportedThrough.email_events)).toBeGreaterThanOrEqual(midnight - 1);
    expect(dataExport.status).toBe('idle');
    expect(Date.parse(dataExport.nextRunAt)).toBeGreaterThan(Date.now());
    await expectExactlyOnce(id, [prefix], ['email_events', 'custom_events'], 'daily');
    const day = utcDate(midnight - DAY_MS);
    expect((await h.list(`${prefix}/email_events`)).map((o) => o.key)).toEqual([
      `${prefix}/email_events/date=${day}/email_events-${midnight - DAY_MS - 1}-${midnight - 1}-0000.jsonl.gz`,
      `${prefix}/email_events/date=${day}/email_events-${midnight - DAY_MS - 1}-${midnight - 1}-0001.jsonl.gz`,
    ]);
  }, 300_000);

  it('an execution that times out: it stays running only until its lease expires, a tick settles it as failed with backoff, and the next run continues its windows', async () => {
    // Prepare: an ExportRun with a 10-second timeout (ClaimAndPlan surely ends inside it) whose first item
    // is written and whose other items never finish (the execution times out, no Catch runs, no Commit)
    const { id, prefix } = await createExport(['custom_events']);
    let firstWritten!: () => void;
    const written = new Promise<void>((resolve) => {
      firstWritten = resolve;
    });
    let unblock!: () => void;
    const blocked = new Promise<void>((resolve) => {
      unblock = resolve;
    });
    let first = true;
    const runner = await h.workflows({
      exportRunTimeoutSeconds: 10,
      intercept: async (state, payload, invoke) => {
        if (state !== 'WriteWindow') return invoke(payload);
        if (first) {
          first = false;
          const result = await invoke(payload);
          firstWritten();
          await blocked;
          return result;
        }
        await blocked;
        return null;
      },
    });

    // Act 1: the execution times out
    const outcome = await runner.runExportRun(input(id));
    await written;

    // Assess 1: stuck as it would be on AWS: running, leased
    expect(outcome.status).toBe('failed');
    expect(outcome.error?.Error).toBe('States.Timeout');
    expect((await view(id)).status).toBe('running');
    expect(await h.leases.get(h.ws.workspaceId, id)).toBeDefined();

    // Act 2: the lease expires; the next tick settles the run
    await expireLease(id);
    const tick = await workflows.runDispatch();
    unblock();

    // Assess 2: failed, with a message, a failure counted, backed off; the run record failed; no lease
    expect(tick.runs.filter((run) => (run.input as Json).destinationId === id)).toEqual([]);
    const settled = await view(id);
    expect(settled).toMatchObject({ status: 'failed', consecutiveFailures: 1 });
    expect(settled.lastError).toMatch(/did not finish/);
    expect(Date.parse(settled.nextRunAt)).toBeGreaterThan(Date.now() + 30 * MINUTE_MS);
    expect((await runRecords(id)).map((run) => run.status)).toEqual(['failed']);
    expect(await h.leases.get(h.ws.workspaceId, id)).toBeUndefined();

    // Act 3: run now; the run continues what the first one wrote
    expect((await h.ws.client.post<Json>(`/data-exports/${id}/run`, {})).status).toBe(200);
    const runs = await tickUntilCaughtUp(workflows, id);

    // Assess 3
    expect(runs.map((run) => run.status)).toEqual(runs.map(() => 'succeeded'));
    expect((await view(id)).consecutiveFailures).toBe(0);
    await expectExactlyOnce(id, [prefix], ['custom_events']);
  }, 300_000);

  it('a Commit retried after it wrote, and a late duplicate of it: one outcome, the counts kept', async () => {
    // Prepare: Commit fails once after doing its work (a transient error on the way back)
    const { id, prefix } = await createExport(['custom_events']);
    let commits = 0;
    let replay: (() => Promise<Payload>) | undefined;
    const runner = await h.workflows({
      retryIntervalOverrides: { Commit: 0 },
      intercept: async (state, payload, invoke) => {
        if (state !== 'Commit') return invoke(payload);
        commits += 1;
        replay = () => invoke(payload);
        const output = await invoke(payload);
        if (commits === 1) {
          const error = new Error('The response was lost on the way back.');
          error.name = 'DatabaseUnavailableError';
          throw error;
        }
        return output;
      },
    });

    // Act
    const outcome = await runner.runExportRun(input(id));
    const duplicate = await replay?.();

    // Assess
    expect(commits).toBe(2);
    expect(outcome.status).toBe('succeeded');
    expect(duplicate).toEqual((outcome.output as Json).commit);
    const records = await runRecords(id);
    expect(records).toHaveLength(1);
    const dataExport = await view(id);
    const throughMs = Date.parse(dataExport.exportedThrough.custom_events);
    const rows = [...ingested.values()].filter(
      (row) =>
        row.dataset === 'custom_events' && row.recordedMs > startFromMs - 1 && row.recordedMs <= throughMs,
    ).length;
    expect(records[0]).toMatchObject({ status: 'succeeded', rowCount: rows });
    expect(dataExport.totalRowsExported).toBe(rows);
    await expectExactlyOnce(id, [prefix], ['custom_events']);
  }, 300_000);

  it('RecordFailure failing too: the run ends failed holding its lease; once the lease expires a tick settles it, and the next run commits what was written', async () => {
    // Prepare: Commit fails on every attempt, and so does RecordFailure (the control table "down")
    const { id, prefix } = await createExport(['custom_events']);
    const calls: string[] = [];
    const down = () => {
      const error = new Error('The control table was unavailable.');
      error.name = 'DatabaseUnavailableError';
      return error;
    };
    const runner = await h.workflows({
      retryIntervalOverrides: { Commit: 0, RecordFailure: 0 },
      intercept: async (state, payload, invoke) => {
        calls.push(state);
        if (state === 'Commit' || state === 'RecordFailure') throw down();
        return invoke(payload);
      },
    });

    // Act 1
    const outcome = await runner.runExportRun(input(id));

    // Assess 1: failed, every attempt of both made; the destination is left running and leased
    expect(outcome.status).toBe('failed');
    // Each tried once and then retried as its Retry allows (4 and 5 times)
    expect(calls.filter((state) => state === 'Commit')).toHaveLength(1 + 4);
    expect(calls.filter((state) => state === 'RecordFailure')).toHaveLength(1 + 5);
    expect((await view(id)).status).toBe('running');

    // Act 2: its lease expires, a tick settles it
    await expireLease(id);
    await workflows.runDispatch();

    // Assess 2
    expect(await view(id)).toMatchObject({ status: 'failed', consecutiveFailures: 1 });
    expect((await runRecords(id)).map((run) => run.status)).toEqual(['failed']);

    // Act 3: run now
    expect((await h.ws.client.post<Json>(`/data-exports/${id}/run`, {})).status).toBe(200);
    const runs = await tickUntilCaughtUp(workflows, id);

    // Assess 3: the windows written by the failed run are committed without being written again
    expect(runs.map((run) => run.status)).toEqual(runs.map(() => 'succeeded'));
    expect(runs[0]?.rows).toBe(0);
    const records = await runRecords(id);
    expect(records.map((run) => run.status)).toEqual(['succeeded', 'failed']);
    expect(records[0]?.rowCount).toBe((await view(id)).totalRowsExported);
    expect(records[0]?.rowCount).toBeGreaterThan(0);
    await expectExactlyOnce(id, [prefix], ['custom_events']);
  }, 300_000);

  it('two executions at once: a second one while the first writes is skipped; one that claims after the first outlived its lease takes over, and the late one moves nothing', async () => {
    // Prepare: execution A writes its first item, then stalls
    const { id, prefix } = await createExport(['custom_events']);
    let runA: string | undefined;
    let aWrote!: () => void;
    const aFirst = new Promise<void>((resolve) => {
      aWrote = resolve;
    });
    let resumeA!: () => void;
    const aResumes = new Promise<void>((resolve) => {
      resumeA = resolve;
    });
    let aFirstDone = false;
    const aResults: Json[] = [];
    const runner = await h.workflows({
      intercept: async (state, payload, invoke) => {
        if (state === 'ClaimAndPlan') {
          const output = (await invoke(payload)) as Json;
          if (runA === undefined && output.outcome === 'planned') runA = output.run.runId;
          return output;
        }
        if (state !== 'WriteWindow' || ((payload as Json).run as Json).runId !== runA) return invoke(payload);
        if (!aFirstDone) {
          aFirstDone = true;
          const result = await invoke(payload);
          aWrote();
          await aResumes;
          aResults.push(result as Json);
          return result;
        }
        await aResumes;
        const result = await invoke(payload);
        aResults.push(result as Json);
        return result;
      },
    });
    const a = runner.runExportRun(input(id));
    await aFirst;

    // Act 1: a second execution while A holds the lease
    const b = await runner.runExportRun(input(id));

    // Assess 1
    expect(b).toMatchObject({ status: 'skipped', reason: 'lease_held' });

    // Act 2: A outlives its lease; C claims, settles A, writes and commits; then A goes on
    await expireLease(id);
    const c = await runner.runExportRun(input(id));
    resumeA();
    const late = await a;

    // Assess 2: C did the work; A's other writers stopped before a file; A's Commit moved nothing
    expect(c.status).toBe('succeeded');
    expect(late.status).toBe('failed');
    expect(aResults.slice(1).every((r) => r.status === 'stopped' || r.files === 0)).toBe(true);
    const records = await runRecords(id);
    expect(records.map((run) => run.status).sort()).toEqual(['failed', 'succeeded']);
    expect(await view(id)).toMatchObject({ status: 'idle', consecutiveFailures: 0 });
    const runs = await tickUntilCaughtUp(workflows, id);
    expect(runs.map((run) => run.status)).toEqual(runs.map(() => 'succeeded'));
    await expectExactlyOnce(id, [prefix], ['custom_events']);
  }, 300_000);

  it('a pause mid-run stops the run before its next file; resumed and run, the export finishes exactly once', async () => {
    // Prepare
    const { id, prefix } = await createExport(['custom_events']);
    const runner = await h.workflows({
      intercept: firstItemThen(async () => {
        expect((await h.ws.client.patch<Json>(`/data-exports/${id}`, { isEnabled: false })).status).toBe(200);
      }),
    });

    // Act 1
    const outcome = await runner.runExportRun(input(id));

    // Assess 1
    expect(outcome.status).toBe('stopped');
    expect(await view(id)).toMatchObject({ status: 'idle', isEnabled: false, consecutiveFailures: 0 });
    expect(await h.leases.get(h.ws.workspaceId, id)).toBeUndefined();

    // Act 2: resumed (it keeps its next slot: the stopped run's commit set it), then run now
    expect((await h.ws.client.patch<Json>(`/data-exports/${id}`, { isEnabled: true })).status).toBe(200);
    expect((await h.ws.client.post<Json>(`/data-exports/${id}/run`, {})).status).toBe(200);
    const runs = await tickUntilCaughtUp(workflows, id);

    // Assess 2
    expect(runs.length).toBeGreaterThan(0);
    await expectExactlyOnce(id, [prefix], ['custom_events']);
  }, 300_000);

  it('a PATCH of the location mid-run stops the run before its next file; the next tick continues at the new place', async () => {
    // Prepare
    const { id, prefix } = await createExport(['custom_events']);
    const moved = uniqueId('e2e-faults/');
    const runner = await h.workflows({
      intercept: firstItemThen(async () => {
        const patched = await h.ws.client.patch<Json>(`/data-exports/${id}`, { pathPrefix: moved });
        expect(patched.status).toBe(200);
      }),
    });

    // Act
    const outcome = await runner.runExportRun(input(id));
    const runs = await tickUntilCaughtUp(workflows, id);

    // Assess: the windows before the move are at the old place, the rest at the new one, each row once
    expect(outcome.status).toBe('stopped');
    expect(runs.length).toBeGreaterThan(0);
    expect((await h.list(`${moved}/custom_events`)).length).toBeGreaterThan(0);
    await expectExactlyOnce(id, [prefix, moved], ['custom_events']);
  }, 300_000);

  it('a delete mid-run stops the run before its next file and leaves no lease, cursor, progress or run record', async () => {
    // Prepare
    const { id } = await createExport(['custom_events']);
    const runner = await h.workflows({
      intercept: firstItemThen(async () => {
        expect((await h.ws.client.delete<Json>(`/data-exports/${id}`)).status).toBe(200);
      }),
    });

    // Act
    const outcome = await runner.runExportRun(input(id));

    // Assess
    expect(outcome.status).toBe('stopped');
    const left = await control.documentClient.send(
      new QueryCommand({
        TableName: h.controlTable,
        KeyConditionExpression: 'PK = :pk AND begins_with(SK, :sk)',
        ExpressionAttributeValues: { ':pk': control.workspacePk(h.ws.workspaceId), ':sk': `DEST#${id}` },
      }),
    );
    expect(left.Items).toEqual([]);
    const runs = await control.documentClient.send(
      new QueryCommand({
        TableName: h.controlTable,
        KeyConditionExpression: 'PK = :pk',
        ExpressionAttributeValues: { ':pk': control.runsPk(h.ws.workspaceId, id) },
      }),
    );
    expect(runs.Items).toEqual([]);
  }, 300_000);

  it('a snapshot resumed by the next run, then retried with fewer subscribers: no file of the earlier attempt stays readable as data, _SUCCESS comes last', async () => {
    // Prepare: 50,600 subscribers (two files), writers with no budget: the first run writes file 0 and
    // stops; the second continues with file 1 and dies right after uploading it; before its retry, the
    // subscribers of that file are deleted, so the retry has nothing left to write.
    const ws = h.ws.workspaceId;
    const { generateSubscribers } = await import('@sluice/eventlog');
    const subscribers = [...generateSubscribers({ count: SUBSCRIBERS, workspaceId: ws })];
    for (let i = 0; i < subscribers.length; i += 5_000) {
      expect((await h.events.upsertSubscribers(ws, subscribers.slice(i, i + 5_000))).accepted).toBe(
        Math.min(5_000, subscribers.length - i),
      );
    }
    const { id, prefix } = await createExport(['subscribers']);
    const today = utcDate(Date.now());
    const uploads: string[] = [];
    let deleted: string[] = [];
    const dying = dyingBucketWriter(async (key) => {
      uploads.push(key);
      if (key !== snapshotFileKey(prefix, today, 1) || deleted.length > 0) return false;
      deleted = (await h.readLines(key)).map((line) => (JSON.parse(line) as { id: string }).id);
      expect((await h.events.deleteSubscribers(ws, deleted)).accepted).toBe(deleted.length);
      return true;
    });
    const markers: string[] = [];
    const withMarkers: BucketWriterFactory = (location, credentials) => {
      const writer = dying(location, credentials);
      return {
        ...writer,
        async writeMarker(key, body) {
          markers.push(key);
          uploads.push(key);
          return writer.writeMarker(key, body);
        },
      };
    };
    const results: Json[] = [];
    const snapshotRunner = await workflowsWithBucket(withMarkers, {
      retryIntervalOverrides: { WriteWindow: 0 },
      intercept: async (state, payload, invoke) => {
        const output = await noBudget(state, payload, invoke);
        if (state === 'WriteWindow') results.push(output as Json);
        return output;
      },
    });

    // Act
    const first = await snapshotRunner.runExportRun(input(id));
    const outcome = await snapshotRunner.runExportRun(input(id));

    // Assess: the first run stopped out of time after file 0 and asked to run again
    expect(first).toMatchObject({ status: 'succeeded', runAgain: true });
    expect(results.map((r) => [r.status, r.files])).toEqual([
      ['partial', 1],
      ['written', 0],
    ]);
    // Assess: file 1 was written twice, the second time empty; the data files hold every subscriber left,
    // each once; _SUCCESS is the last upload; the snapshot is committed
    expect(outcome.status).toBe('succeeded');
    expect(deleted.length).toBe(SUBSCRIBERS - 50_000);
    expect(await h.readLines(snapshotFileKey(prefix, today, 1))).toEqual([]);
    const lines = await h.readLines(snapshotFileKey(prefix, today, 0));
    const ids = lines.map((line) => (JSON.parse(line) as { id: string }).id);
    expect(new Set(ids).size).toBe(50_000);
    expect(ids.some((subscriberId) => deleted.includes(subscriberId))).toBe(false);
    expect(uploads.at(-1)).toBe(snapshotSuccessKey(prefix, today));
    // The only marker besides the schema and recipes written beside the data (`_sluice/schema/`) is _SUCCESS.
    expect(markers.filter((key) => !key.includes('/_sluice/schema/'))).toEqual([
      snapshotSuccessKey(prefix, today),
    ]);
    expect((await h.list(`${prefix}/subscribers`)).map((o) => o.key).sort()).toEqual(
      [
        snapshotFileKey(prefix, today, 0),
        snapshotFileKey(prefix, today, 1),
        snapshotSuccessKey(prefix, today),
      ].sort(),
    );
    const dataExport = await view(id);
    expect(dataExport.exportedThrough.subscribers.slice(0, 10)).toBe(today);
    expect(dataExport.status).toBe('idle');
    expect(await h.leases.get(ws, id)).toBeUndefined();
  }, 600_000);
});
