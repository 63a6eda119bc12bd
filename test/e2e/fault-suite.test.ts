import { createHash, randomInt, randomUUID } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import { GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import {
  HOUR_MS,
  type EventDataset,
  gridExportLimit,
  gridStartOf,
  splitAtBoundaries,
  startOfUtcDay,
} from '@sluice/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ExportRunOutcome, LambdaHandler } from '@sluice/devstack';
import { captureOutput } from '../helpers/output-capture.js';
import { FAULT_KINDS, type FaultProxy, startFaultProxy } from '../helpers/fault-proxy.js';
import { controlTable, eventTables, kmsKey, localBucketOrigins } from '../helpers/tables.js';

/**
 * The fault suite: an export of {@link ROWS} rows through the synthesized ExportRun definition and the real
 * handlers (as the local runtime runs it), with a fault-injecting proxy between the SDK and both DynamoDB Local
 * and the local bucket. The proxy answers `500`s, `503 SlowDown`, DynamoDB throttling, resets the connection
 * mid-request and mid-response, and stalls. Runs repeat until the destination has caught up; then every row is
 * in the bucket exactly once, in the window of its recorded time, every object gunzips whole, the cursor is the
 * end of the last window with every window before it written, and nothing is left running.
 *
 * `SLUICE_FAULT_SEED` replays a seed (printed by every run); `SLUICE_FAULT_ROWS` sizes the export.
 */

const ROWS = Number(process.env.SLUICE_FAULT_ROWS ?? 200_000);
const SEED = Number(process.env.SLUICE_FAULT_SEED ?? randomInt(2 ** 31));
/** Share of requests given a fault while the export runs: DynamoDB gets hundreds, the bucket a few dozen. */
const DYNAMODB_FAULT_RATE = 0.12;
const BUCKET_FAULT_RATE = 0.25;
/** Below the DynamoDB clients' 5 s request timeout and the bucket client's 60 s socket timeout. */
const MAX_STALL_MS = 1_500;
const MAX_RUNS = 40;
/** The engine's lease lasts 6 minutes: a wait for one left by a dead run is at most that. */
const LEASE_WAIT_LIMIT_MS = 6 * 60_000 + 5_000;
const DATASETS: readonly EventDataset[] = ['email_events', 'custom_events'];

// At least 65 minutes ago: the hour after it is then complete and older than the export lag.
const midnight = startOfUtcDay(Date.now() - HOUR_MS - 5 * 60_000);
const startFromMs = midnight - 2 * HOUR_MS;
const lastRowMs = midnight + HOUR_MS - 60_000;
const workspaceId = `ws_faults${randomUUID().replaceAll('-', '').slice(0, 12)}`;
const pathPrefix = `fault-suite/${workspaceId}`;

let dynamoProxy: FaultProxy;
let s3Proxy: FaultProxy;
let direct: S3Client;
/** Each ingested row's recorded time, by id. */
const recordedAt = new Map<string, { dataset: string; ms: number }>();
const outcomes: ExportRunOutcome[] = [];
/** The workflow runner's lines: a task that failed (then retried or caught by the definition). */
const taskErrors: string[] = [];
/** Waits for a lease left by a run that died, in ms. */
const leaseWaits: number[] = [];

/** The runs so far: status, and the reason or error. */
function describeRuns(): string {
  return outcomes
    .map((o) => o.status + (o.reason ? `:${o.reason}` : '') + (o.error ? `:${o.error.Error}` : ''))
    .join(', ');
}
let destinationId: string;
let startedAt: number;
/** When the last run began: it planned through the export limit of some instant between then and its end. */
let lastRunStartedAt: number;

// The packages read the environment at load: they are imported once the proxies are in it.
let modules: Awaited<ReturnType<typeof load>>;
async function load() {
  const [control, eventlog, secrets, core, engine, local, s3local, writerFunction, writerConfig] =
    await Promise.all([
      import('@sluice/control'),
      import('@sluice/eventlog'),
      import('@sluice/secrets'),
      import('@sluice/core'),
      import('@sluice/engine'),
      import('@sluice/local'),
      import('@sluice/devstack'),
      import('../../functions/writer/function.js'),
      import('../../functions/writer/config.js'),
    ]);
  return { control, eventlog, secrets, core, engine, local, s3local, writerFunction, writerConfig };
}

beforeAll(async () => {
  startedAt = performance.now();
  const dynamoEndpoint = process.env.AWS_ENDPOINT_URL_DYNAMODB as string;
  const s3Endpoint = process.env.SLUICE_LOCAL_S3_ENDPOINT as string;
  const { mulberry32 } = await import('@sluice/eventlog');
  dynamoProxy = await startFaultProxy({
    target: dynamoEndpoint,
    service: 'dynamodb',
    random: mulberry32(SEED),
    rate: DYNAMODB_FAULT_RATE,
    maxStallMs: MAX_STALL_MS,
  });
  s3Proxy = await startFaultProxy({
    target: s3Endpoint,
    service: 's3',
    random: mulberry32(SEED ^ 0x5bd1e995),
    rate: BUCKET_FAULT_RATE,
    maxCleanRun: 3,
    // Bursts on the bucket only: a writer's upload then fails past the SDK's three attempts, and the
    // workflow's Retry, the Map's Catch and the next run take over. (A burst on DynamoDB could also fail the
    // RecordFailure of a run, whose lease then holds the destination for minutes, until it expires.)
    burst: { chance: 0.5, length: 6 },
    maxStallMs: MAX_STALL_MS,
  });
  // The SDK's DynamoDB clients take their endpoint from the environment when they are built, at load.
  process.env.AWS_ENDPOINT_URL_DYNAMODB = dynamoProxy.endpoint;
  modules = await load();
  const { control, eventlog, secrets, core, s3local } = modules;
  direct = new S3Client({
    endpoint: s3Endpoint,
    region: s3local.LOCAL_REGION,
    forcePathStyle: true,
    credentials: s3local.LOCAL_S3_CREDENTIALS,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });

  // Seed the event log straight into DynamoDB Local (not through the proxy): EventLogWriter's batch path.
  const writer = new eventlog.EventLogWriter({
    ...eventTables,
    explicitRecordedAt: 'unchecked',
    client: eventlog.createEventLogClient({ endpoint: dynamoEndpoint }),
    batch: { concurrency: 16 },
  });
  const seedStarted = performance.now();
  let chunk: Record<string, unknown>[] = [];
  const flush = async () => {
    const result = await writer.ingestEvents(workspaceId, chunk);
    if (result.invalid.length > 0 || result.accepted !== chunk.length)
      throw new Error(`seeding refused rows: ${JSON.stringify(result.invalid.slice(0, 3))}`);
    chunk = [];
  };
  for (const event of eventlog.generateEvents({
    count: ROWS,
    workspaceId,
    seed: SEED,
    from: startFromMs,
    to: lastRowMs,
    mix: { email_events: 85, custom_events: 15 },
  })) {
    recordedAt.set(event.id, { dataset: event.dataset, ms: Date.parse(event.recorded_at as string) });
    chunk.push(event as unknown as Record<string, unknown>);
    if (chunk.length === 10_000) await flush();
  }
  if (chunk.length > 0) await flush();
  const seedMs = performance.now() - seedStarted;

  // The destination, on the local bucket through the proxy.
  destinationId = `exp_${randomUUID().replaceAll('-', '')}`;
  const store = new control.ControlStore(controlTable);
  await store.ensureWorkspace(workspaceId);
  await store.createDestination({
    ...core.newDestination({
      workspaceId,
      id: destinationId,
      name: 'Fault suite',
      provider: 's3',
      bucket: s3local.LOCAL_BUCKET,
      region: s3local.LOCAL_REGION,
      endpoint: s3Proxy.endpoint,
      pathPrefix,
      accessKeyId: s3local.LOCAL_S3_CREDENTIALS.accessKeyId,
      secret: await new secrets.SecretSealer(kmsKey).seal(s3local.LOCAL_S3_CREDENTIALS.secretAccessKey, {
        workspaceId,
        destinationId,
      }),
      datasets: [...DATASETS],
      frequency: 'hourly',
      startFrom: new Date(startFromMs).toISOString(),
      now: new Date(),
    }),
    status: 'idle',
    manualRunQueued: false,
    nextRunAt: null,
  });
  console.log(
    `fault suite: seed ${SEED} (SLUICE_FAULT_SEED=${SEED} replays it), ${ROWS.toLocaleString('en-US')} rows ` +
      `seeded in ${(seedMs / 1000).toFixed(1)} s`,
  );
}, 600_000);

afterAll(async () => {
  direct?.destroy();
  await dynamoProxy?.close();
  await s3Proxy?.close();
});

/** Runs ExportRun executions, faults on, until a run succeeds with nothing left to do. */
async function exportUntilCaughtUp(): Promise<void> {
  const { local, writerFunction, writerConfig } = modules;
  // The definition's own Retry backoff (2 s, 4 s, ... with jitter) is shortened: the faults are the point.
  const retryIntervalOverrides = Object.fromEntries(
    ['ClaimAndPlan', 'WriteWindow', 'Commit', 'RecordFailure'].map((state) => [state, 50]),
  );
  // The real writer, with the bucket proxy's origin exempt from the endpoint rules beside the local bucket's.
  const writer = writerFunction.createWriterFunction(writerConfig.readWriterConfig(process.env), {
    allowedEndpoints: new Set([...localBucketOrigins, new URL(s3Proxy.endpoint).origin]),
  });
  const runner = await local.localWorkflows({
    functions: { writer: writer as LambdaHandler },
    retryIntervalOverrides,
    log: (line) => taskErrors.push(line),
  });
  // The handlers' log lines are kept out of the test output (SLUICE_TEST_LOGS=1 shows them).
  const output = captureOutput({ passThrough: process.env.SLUICE_TEST_LOGS === '1' });
  dynamoProxy.faultsOn = true;
  s3Proxy.faultsOn = true;
  try {
    for (let i = 0; i < MAX_RUNS; i++) {
      lastRunStartedAt = Date.now();
      const outcome = await runner.runExportRun({ workspaceId, destinationId, trigger: 'manual' });
      outcomes.push(outcome);
      if (outcome.status === 'succeeded' && !outcome.runAgain) return;
      if (outcome.status === 'skipped' && outcome.reason === 'lease_held') {
        // The runs here go one at a time, so the holder is a run that ended without releasing its lease (its
        // RecordFailure failed too). As in production, the lease expires and the next claim settles that run.
        const lease = await new modules.control.LeaseStore(controlTable).get(workspaceId, destinationId);
        const waitMs = Math.min((lease?.expiresAtMs ?? 0) - Date.now() + 1_000, LEASE_WAIT_LIMIT_MS);
        leaseWaits.push(waitMs);
        if (waitMs > 0) await new Promise((resolve) => setTimeout(resolve, waitMs));
      }
    }
    throw new Error(
      `not caught up after ${MAX_RUNS} runs: ${describeRuns()}; task errors: ${taskErrors.slice(-5).join(' | ')}`,
    );
  } finally {
    dynamoProxy.faultsOn = false;
    s3Proxy.faultsOn = false;
    output.stop();
  }
}

/** The run manifests read by {@link objects}: key and document. */
const manifests = new Map<string, { files: { key: string; rows: number; sha256: string }[] }>();
/** SHA-256 of every data object read by {@link objects}. */
const sha256Of = new Map<string, string>();

/** Every data object under the destination's prefix (manifests kept aside), read from s3rver directly. */
async function objects(): Promise<{ key: string; lines: string[] }[]> {
  const found: { key: string; lines: string[] }[] = [];
  let token: string | undefined;
  do {
    const page = await direct.send(
      new ListObjectsV2Command({
        Bucket: modules.s3local.LOCAL_BUCKET,
        Prefix: `${pathPrefix}/`,
        ContinuationToken: token,
      }),
    );
    for (const item of page.Contents ?? []) {
      const key = item.Key as string;
      const object = await direct.send(
        new GetObjectCommand({ Bucket: modules.s3local.LOCAL_BUCKET, Key: key }),
      );
      const bytes = Buffer.from((await object.Body?.transformToByteArray()) ?? []);
      if (key.startsWith(`${pathPrefix}/_sluice/manifests/`)) {
        manifests.set(key, JSON.parse(bytes.toString('utf8')));
        continue;
      }
      // The schema and reading recipes written beside the data are not data.
      if (key.startsWith(`${pathPrefix}/_sluice/schema/`)) continue;
      sha256Of.set(key, createHash('sha256').update(bytes).digest('hex'));
      // gunzipSync throws on a truncated stream: a partial object fails here.
      const text = gunzipSync(bytes).toString('utf8');
      found.push({ key, lines: text === '' ? [] : text.replace(/\n$/, '').split('\n') });
    }
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  return found;
}

describe('the fault suite', () => {
  it(`exports every row exactly once through 500s, SlowDown, throttling, resets and stalls`, async () => {
    // Act
    await exportUntilCaughtUp();

    // Assess 1: every object whole; every row exactly once, in the window of its recorded time
    const files = await objects();
    const seen = new Map<string, number>();
    const windowsWithFiles = new Map<EventDataset, Set<number>>(DATASETS.map((d) => [d, new Set()]));
    for (const file of files) {
      const match = /\/(email_events|custom_events)\/date=[^/]+\/\1-(\d+)-(\d+)-\d{4}\.jsonl\.gz$/.exec(
        file.key,
      );
      expect(match, file.key).not.toBeNull();
      const [, dataset, from, to] = match as RegExpExecArray;
      windowsWithFiles.get(dataset as EventDataset)?.add(Number(from));
      for (const line of file.lines) {
        const row = JSON.parse(line) as { id: string };
        seen.set(row.id, (seen.get(row.id) ?? 0) + 1);
        const ingested = recordedAt.get(row.id);
        expect(ingested, `a row never ingested: ${row.id}`).toBeDefined();
        expect(ingested?.dataset).toBe(dataset);
        expect(ingested!.ms > Number(from) && ingested!.ms <= Number(to), `${row.id} in ${file.key}`).toBe(
          true,
        );
      }
    }
    const duplicated = [...seen].filter(([, n]) => n > 1);
    const missing = [...recordedAt.keys()].filter((id) => !seen.has(id));
    expect(duplicated.slice(0, 5)).toEqual([]);
    expect(missing.slice(0, 5)).toEqual([]);
    expect(seen.size).toBe(ROWS);
    // Every window with files has a manifest listing exactly them, as stored, through every fault and retry
    const listed = [...manifests.values()].flatMap((manifest) => manifest.files);
    expect(listed.map((file) => file.key).sort()).toEqual(files.map((file) => file.key).sort());
    for (const file of listed) {
      expect(file.sha256, file.key).toBe(sha256Of.get(file.key));
      expect(file.rows, file.key).toBe(files.find((f) => f.key === file.key)?.lines.length);
    }

    // Assess 2: each cursor is the end of its last window, and every window before it that holds rows has files
    const { control } = modules;
    const cursors = await new control.CursorStore(controlTable).get(workspaceId, destinationId);
    // The last run's limit: of its start, or of a later instant when its plan came after an hour's edge.
    const limits = [gridExportLimit(lastRunStartedAt, 'hourly'), gridExportLimit(Date.now(), 'hourly')];
    for (const dataset of DATASETS) {
      const cursor = cursors.get(dataset);
      expect(limits).toContain(cursor?.exportedThroughMs);
      expect(cursor?.plannedSpans).toEqual([]);
      const windows = splitAtBoundaries(
        gridStartOf(startFromMs, HOUR_MS),
        cursor!.exportedThroughMs!,
        HOUR_MS,
      );
      const withRows = windows
        .filter((w) =>
          [...recordedAt.values()].some((r) => r.dataset === dataset && r.ms > w.fromMs && r.ms <= w.toMs),
        )
        .map((w) => w.fromMs);
      expect([...(windowsWithFiles.get(dataset) ?? [])].sort()).toEqual(withRows.sort());
    }

    // Assess 3: nothing left running
    const destination = await new control.ControlStore(controlTable).getDestination(
      workspaceId,
      destinationId,
    );
    expect(destination?.status).not.toBe('running');
    expect(await new control.LeaseStore(controlTable).get(workspaceId, destinationId)).toBeUndefined();
    const runs = await control.documentClient.send(
      new QueryCommand({
        TableName: process.env.SLUICE_CONTROL_TABLE,
        KeyConditionExpression: 'PK = :pk',
        ExpressionAttributeValues: { ':pk': control.runsPk(workspaceId, destinationId) },
      }),
    );
    expect((runs.Items ?? []).filter((run) => run.status === 'running')).toEqual([]);
    // No transient fault was ever reported as a permanent error (which would have stopped retries).
    const permanent = outcomes.filter((o) =>
      modules.engine.PERMANENT_ERROR_NAMES.includes(o.error?.Error ?? ''),
    );
    expect(permanent.map((o) => o.error)).toEqual([]);

    // The figures
    const injected = (proxy: FaultProxy) =>
      FAULT_KINDS.filter((kind) => proxy.injected[kind] > 0)
        .map((kind) => `${kind} ${proxy.injected[kind]}`)
        .join(', ');
    console.log(
      `fault suite: seed ${SEED}: ${dynamoProxy.totalInjected() + s3Proxy.totalInjected()} faults injected ` +
        `(DynamoDB ${dynamoProxy.totalInjected()} of ${dynamoProxy.requests} requests: ${injected(dynamoProxy)}; ` +
        `bucket ${s3Proxy.totalInjected()} of ${s3Proxy.requests} requests, ${s3Proxy.bursts} bursts: ` +
        `${injected(s3Proxy)}); ` +
        `${taskErrors.length} task errors past the SDK's retries; ${outcomes.length} runs (${describeRuns()}), ${leaseWaits.length} waits for a dead run's lease; ` +
        `${files.length} objects, ${seen.size.toLocaleString('en-US')} rows; ` +
        `${((performance.now() - startedAt) / 1000).toFixed(1)} s in all`,
    );
    // The proxies were in the path of the control table, the event log and the bucket.
    expect([...dynamoProxy.operations.keys()]).toEqual(
      expect.arrayContaining(['TransactWriteItems', 'Query', 'GetItem']),
    );
    expect([...s3Proxy.operations.keys()]).toContain('PUT');
    expect(dynamoProxy.totalInjected()).toBeGreaterThan(0);
    expect(s3Proxy.totalInjected()).toBeGreaterThan(0);
  }, 1_200_000);
});
