import { createHash, randomUUID } from 'node:crypto';
import { GetObjectCommand, ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import type { EventPage, EventSource } from '@sluice/eventlog';

/**
 * Resumed writers against one pass: one big event window (default 1,000,000 rows, 20 files) is exported
 * twice by the engine's `writeWindow`, once in a single invocation and once by invocations with a time
 * budget small enough to stop several times inside the window (each a new run with its own lease, as the
 * next ExportRun continues it). Every file of both exports is hashed (sha256): the bytes must be the same.
 * Prints rows/s of each and the number of invocations; asserts nothing about time.
 *
 * Two sources, as in the writer bench: the event log in DynamoDB Local (`dynamoRows` ingested into one
 * hour) and an in-memory source honouring `afterKey` (`rows`), which separates the engine from the Java
 * emulator. The bucket (s3rver), the control table (leases, progress) and KMS are the local services.
 */

/** What one source measured. */
export interface ResumeFigures {
  source: 'dynamodb-local' | 'memory';
  rows: number;
  files: number;
  onePassMs: number;
  resumedMs: number;
  /** Invocations of the resumed export (the one pass is 1). */
  invocations: number;
  budgetMs: number;
  /** Every file of both exports has the same name and sha256. */
  identical: boolean;
}

const HOUR_MS = 3_600_000;

/** An in-memory window of `rows` lines cycled from a pool, in pages of 1,000, resumable after a key. */
function memorySource(pool: readonly string[], rows: number): EventSource {
  const keyOf = (i: number) => String(i).padStart(13, '0');
  return {
    async *readWindow(_workspaceId, _dataset, _fromMs, toMs, afterKey) {
      const start = afterKey === undefined ? 0 : Number(afterKey) + 1;
      for (let sent = start; sent < rows; sent += 1000) {
        const page: EventPage = { lines: [], keys: [], recordedMs: [] };
        for (let i = sent; i < Math.min(rows, sent + 1000); i++) {
          page.lines.push(pool[i % pool.length] as string);
          page.keys.push(keyOf(i));
          page.recordedMs.push(toMs);
        }
        yield page;
      }
    },
    hasRowsAfter: async () => true,
    async *readSubscribers() {},
  };
}

/**
 * sha256 of every object of the local export bucket under `prefix`, by its key below the prefix. With
 * `metadataWithoutPrefix`, the documents under `_sluice/` (manifests, schema files: they name the full keys)
 * are hashed with the prefix taken out, so two exports to different prefixes compare equal when they wrote the
 * same files.
 */
export async function objectHashes(
  bucket: S3Client,
  prefix: string,
  options: { metadataWithoutPrefix?: boolean } = {},
): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  let token: string | undefined;
  do {
    const page = await bucket.send(
      new ListObjectsV2Command({ Bucket: 'local-exports', Prefix: `${prefix}/`, ContinuationToken: token }),
    );
    for (const item of page.Contents ?? []) {
      const object = await bucket.send(new GetObjectCommand({ Bucket: 'local-exports', Key: item.Key }));
      const key = (item.Key as string).slice(prefix.length);
      let bytes: Uint8Array = (await object.Body?.transformToByteArray()) ?? new Uint8Array();
      if (options.metadataWithoutPrefix && key.startsWith('/_sluice/'))
        bytes = Buffer.from(Buffer.from(bytes).toString('utf8').replaceAll(`${prefix}/`, '/'));
      out.set(key, createHash('sha256').update(bytes).digest('hex'));
    }
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  return out;
}

/**
 * Runs the comparison for each source (DynamoDB Local skipped when `dynamoRows` is 0). Needs the local
 * services' environment in `process.env`. `budgetMs`: each resumed invocation's budget; by default 1 ms, so
 * every invocation writes one file and stops (20 invocations for 1,000,000 rows).
 */
export async function runResumeBench(
  options: { rows: number; dynamoRows: number; budgetMs?: number },
  log: (line: string) => void,
): Promise<ResumeFigures[]> {
  const [control, core, eventlog, engine, { SecretSealer }, { generateEmailLines }, s3] = await Promise.all([
    import('@sluice/control'),
    import('@sluice/core'),
    import('@sluice/eventlog'),
    import('@sluice/engine'),
    import('@sluice/secrets'),
    import('./encode.js'),
    import('@aws-sdk/client-s3'),
  ]);
  const workspaceId = `ws_benchr${randomUUID().slice(0, 8)}`;
  // One whole hour of yesterday: a grid window of an hourly export.
  const hourStart = core.startOfUtcDay(Date.now()) - 12 * HOUR_MS;
  const window = { fromMs: hourStart - 1, toMs: hourStart + HOUR_MS - 1 };

  // Read once the services' environment is set.
  const { controlTable, eventTables, kmsKey, localBucketOrigins } = await import('../test/helpers/tables.js');
  const writer = new eventlog.EventLogWriter({ ...eventTables, explicitRecordedAt: 'unchecked' });
  const ingestStarted = performance.now();
  // Ingested only when DynamoDB Local is measured.
  let batch: unknown[] = [];
  let ingested = 0;
  for (const event of eventlog.generateEvents({
    count: options.dynamoRows,
    workspaceId,
    seed: 17,
    from: window.fromMs,
    to: window.toMs,
    mix: { email_events: 1 },
  })) {
    batch.push(event);
    if (batch.length === 10_000) {
      ingested += (await writer.ingestEvents(workspaceId, batch)).accepted;
      batch = [];
    }
  }
  if (batch.length > 0) ingested += (await writer.ingestEvents(workspaceId, batch)).accepted;
  if (options.dynamoRows > 0)
    log(
      `  ingested ${ingested.toLocaleString('en-US')} events into one hour in ` +
        `${((performance.now() - ingestStarted) / 1000).toFixed(1)} s`,
    );

  const store = new control.ControlStore(controlTable);
  const leases = new control.LeaseStore(controlTable);
  const sealer = new SecretSealer(kmsKey);
  const writerDeps = {
    controlStore: store,
    cursors: new control.CursorStore(controlTable),
    sealer,
    eventSource: new eventlog.EventLogReader(eventTables),
    bucketWriterFactory: engine.createBucketWriterFactory({ allowedEndpoints: localBucketOrigins }),
    metrics: engine.noRunMetrics,
  };
  const endpoint = process.env.SLUICE_LOCAL_S3_ENDPOINT as string;
  const bucket = new s3.S3Client({
    endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
  });

  /** A destination of its own (its own prefix and progress), off the due index. */
  const newDestination = async (): Promise<{ id: string; prefix: string }> => {
    const id = `exp_benchr${randomUUID().replaceAll('-', '').slice(0, 16)}`;
    const prefix = `bench-resume/${id}`;
    await store.createDestination({
      ...core.newDestination({
        workspaceId,
        id,
        name: 'Resume bench',
        provider: 's3',
        bucket: 'local-exports',
        region: 'us-east-1',
        endpoint,
        pathPrefix: prefix,
        accessKeyId: 'S3RVER',
        secret: await sealer.seal('S3RVER', { workspaceId, destinationId: id }),
        datasets: ['email_events'],
        frequency: 'hourly',
        startFrom: new Date(window.fromMs + 1).toISOString(),
        now: new Date(),
      }),
      status: 'idle',
      manualRunQueued: false,
      nextRunAt: null,
    });
    return { id, prefix };
  };

  /** Exports the window with invocations of at most `budgetMs` each (each a new run and lease). */
  const exportWindow = async (
    destinationId: string,
    budgetMs: number,
    eventSource: EventSource | undefined,
  ): Promise<{ ms: number; invocations: number; rows: number; files: number }> => {
    let invocations = 0;
    let rows = 0;
    let files = 0;
    const started = performance.now();
    for (;;) {
      invocations += 1;
      const runId = `run_benchr${randomUUID().slice(0, 8)}`;
      const lease = await leases.claim({
        workspaceId,
        destinationId,
        runId,
        token: randomUUID(),
        startedAt: new Date().toISOString(),
        nowMs: Date.now(),
        durationMs: HOUR_MS,
      });
      if (lease === undefined) throw new Error('the bench destination is leased by another run');
      const result = await engine.writeWindow(
        {
          run: {
            workspaceId,
            destinationId,
            runId,
            startedAt: lease.startedAt,
            leaseToken: lease.token,
            configVersion: 1,
            deadlineMs: Date.now() + budgetMs,
          },
          item: { dataset: 'email_events', kind: 'events', fromMs: window.fromMs, toMs: window.toMs },
        },
        { ...writerDeps, ...(eventSource ? { eventSource } : {}) },
      );
      await leases.release(lease);
      rows += result.rows;
      files += result.files;
      if (result.status === 'written') break;
      if (result.status !== 'partial') throw new Error(`the writer stopped: ${result.stopReason}`);
    }
    return { ms: performance.now() - started, invocations, rows, files };
  };

  const figures: ResumeFigures[] = [];
  const pool = generateEmailLines(10_000, 11);
  // Warm-up (not measured): the first export of the process pays for loading and JIT.
  await exportWindow((await newDestination()).id, 24 * HOUR_MS, memorySource(pool, 20_000));
  const sources = options.dynamoRows > 0 ? (['dynamodb-local', 'memory'] as const) : (['memory'] as const);
  for (const source of sources) {
    const total = source === 'memory' ? options.rows : ingested;
    const eventSource = source === 'memory' ? memorySource(pool, total) : undefined;
    const whole = await newDestination();
    const pieces = await newDestination();
    const one = await exportWindow(whole.id, 24 * HOUR_MS, eventSource);
    const budgetMs = options.budgetMs ?? 1;
    const resumed = await exportWindow(pieces.id, budgetMs, eventSource);
    const [a, b] = await Promise.all([
      objectHashes(bucket, whole.prefix),
      objectHashes(bucket, pieces.prefix),
    ]);
    const identical =
      a.size === one.files && a.size === b.size && [...a].every(([key, hash]) => b.get(key) === hash);
    if (one.rows !== total || resumed.rows !== total) {
      throw new Error(`${source}: exported ${one.rows} and ${resumed.rows} rows of ${total}`);
    }
    const f: ResumeFigures = {
      source,
      rows: total,
      files: one.files,
      onePassMs: one.ms,
      resumedMs: resumed.ms,
      invocations: resumed.invocations,
      budgetMs,
      identical,
    };
    const rate = (ms: number) => Math.round(total / (ms / 1000)).toLocaleString('en-US');
    log(
      `  ${source.padEnd(14)} ${total.toLocaleString('en-US').padStart(9)} rows, ${f.files} files: one pass ` +
        `${rate(f.onePassMs)} rows/s; ${f.invocations} invocations of ${budgetMs} ms budget ${rate(f.resumedMs)} rows/s ` +
        `(${(f.onePassMs / f.resumedMs).toFixed(2)}x); files ${identical ? 'byte-identical' : 'DIFFERENT'} (sha256)`,
    );
    figures.push(f);
  }
  bucket.destroy();
  return figures;
}
