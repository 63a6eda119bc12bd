import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { type EventDataset, newDestination } from '@sluice/core';
import type { EventPage, EventSource } from '@sluice/eventlog';
import { printBenchResult, runBenchChild } from './child.js';

/**
 * Writer end to end: `writeWindow` of the engine reading the event log in DynamoDB Local, encoding and
 * uploading to s3rver, for a small and a large window, each in its own child process so that its peak
 * memory is measured cleanly. Also the same writer over an in-memory event source (s3rver still real), to
 * separate the engine's own rate from DynamoDB Local's (a Java emulator far slower than DynamoDB).
 */

/** One child's figures. */
export interface WriterFigures {
  source: 'dynamodb-local' | 'memory';
  rows: number;
  files: number;
  bytes: number;
  ms: number;
  rowsPerSecond: number;
  /** Peak resident set size of the child, MB. */
  peakRssMb: number;
  /** Resident set size before the window started, MB. */
  baselineRssMb: number;
  /** Peak V8 heap used while writing (sampled every 20 ms), MB. */
  peakHeapMb: number;
}

/** What the child is told to do (as JSON in `SLUICE_BENCH_CHILD`). */
interface ChildTask {
  source: WriterFigures['source'];
  workspaceId: string;
  destinationId: string;
  configVersion: number;
  fromMs: number;
  toMs: number;
  /** For the memory source: how many rows to yield. */
  rows: number;
}

/** An event source that yields `rows` lines cycled from a pool, in pages of 1,000. No DynamoDB. */
function memorySource(pool: string[], rows: number): EventSource {
  return {
    async *readWindow(_workspaceId, _dataset, _fromMs, toMs) {
      for (let sent = 0; sent < rows; sent += 1000) {
        const page: EventPage = { lines: [], keys: [], recordedMs: [] };
        for (let i = sent; i < Math.min(rows, sent + 1000); i++) {
          page.lines.push(pool[i % pool.length] as string);
          page.keys.push(String(i).padStart(13, '0'));
          page.recordedMs.push(toMs);
        }
        yield page;
      }
    },
    hasRowsAfter: async () => true,
    async *readSubscribers() {},
  };
}

async function child(task: ChildTask): Promise<void> {
  const { LeaseStore } = await import('@sluice/control');
  const { controlTable } = await import('../test/helpers/tables.js');
  const runId = `run_bench${randomUUID().slice(0, 8)}`;
  // The writer saves its progress under the run's lease, as in a real run.
  const lease = await new LeaseStore(controlTable).claim({
    workspaceId: task.workspaceId,
    destinationId: task.destinationId,
    runId,
    token: randomUUID(),
    startedAt: new Date().toISOString(),
    nowMs: Date.now(),
    durationMs: 3_600_000,
  });
  if (lease === undefined) throw new Error('the bench destination is leased by another run');
  try {
    await writeCase(task, lease, runId);
  } finally {
    // As Commit does at the end of a run: the next case (the next child) claims the destination again.
    await new LeaseStore(controlTable).release(lease);
  }
}

/** One case's window written whole under `lease`, its figures printed for the parent. */
async function writeCase(
  task: ChildTask,
  lease: { startedAt: string; token: string },
  runId: string,
): Promise<void> {
  const [
    { createBucketWriterFactory, writeWindow, noRunMetrics },
    { generateEmailLines },
    { ControlStore, CursorStore },
    { EventLogReader },
    { SecretSealer },
  ] = await Promise.all([
    import('@sluice/engine'),
    import('./encode.js'),
    import('@sluice/control'),
    import('@sluice/eventlog'),
    import('@sluice/secrets'),
  ]);
  const { controlTable, eventTables, kmsKey, localBucketOrigins } = await import('../test/helpers/tables.js');
  // Each case writes its window whole: forget an earlier case's progress in the same window.
  await new CursorStore(controlTable).deleteProgress(task.workspaceId, task.destinationId, [
    { dataset: 'email_events', window: `${task.fromMs}-${task.toMs}` },
  ]);
  const pool = task.source === 'memory' ? generateEmailLines(10_000, 11) : [];
  const overrides = task.source === 'memory' ? { eventSource: memorySource(pool, task.rows) } : {};
  if (global.gc) global.gc();
  const baselineRss = process.memoryUsage().rss;
  let peakHeap = process.memoryUsage().heapUsed;
  const sampler = setInterval(() => {
    peakHeap = Math.max(peakHeap, process.memoryUsage().heapUsed);
  }, 20);
  const started = performance.now();
  const result = await writeWindow(
    {
      run: {
        workspaceId: task.workspaceId,
        destinationId: task.destinationId,
        runId,
        startedAt: lease.startedAt,
        leaseToken: lease.token,
        configVersion: task.configVersion,
        deadlineMs: Number.POSITIVE_INFINITY,
      },
      item: { dataset: 'email_events' as EventDataset, kind: 'events', fromMs: task.fromMs, toMs: task.toMs },
    },
    {
      controlStore: new ControlStore(controlTable),
      cursors: new CursorStore(controlTable),
      sealer: new SecretSealer(kmsKey),
      eventSource: new EventLogReader(eventTables),
      // The local s3rver, allow-listed as the local runtime does.
      bucketWriterFactory: createBucketWriterFactory({ allowedEndpoints: localBucketOrigins }),
      metrics: noRunMetrics,
      ...overrides,
    },
  );
  const ms = performance.now() - started;
  clearInterval(sampler);
  const figures: WriterFigures = {
    source: task.source,
    rows: result.rows,
    files: result.files,
    bytes: result.bytes,
    ms,
    rowsPerSecond: result.rows / (ms / 1000),
    peakRssMb: process.resourceUsage().maxRSS / 1024,
    baselineRssMb: baselineRss / 1024 / 1024,
    peakHeapMb: peakHeap / 1024 / 1024,
  };
  printBenchResult(figures);
}

function runChild(task: ChildTask): Promise<WriterFigures> {
  const script = fileURLToPath(import.meta.url);
  return runBenchChild<WriterFigures>(
    'writer bench child',
    process.execPath,
    ['--openssl-legacy-provider', '--expose-gc', '--import', 'tsx', script],
    { SLUICE_BENCH_CHILD: JSON.stringify(task), POWERTOOLS_METRICS_DISABLED: 'true' },
  );
}

/** What {@link runWriterBench} measured. */
export interface WriterBenchResult {
  ingestMs: number;
  ingestedRows: number;
  runs: WriterFigures[];
}

/**
 * Ingests `rows` email events recorded over one UTC day (yesterday) into the local event log, creates a
 * destination on s3rver with a sealed secret, then writes a window of about `smallRows` rows and the whole
 * day's window, each in a child process, from DynamoDB Local and from memory. Needs the local services'
 * environment in `process.env`.
 */
export async function runWriterBench(
  options: { rows: number; smallRows: number; dynamoRows?: number },
  log: (line: string) => void,
): Promise<WriterBenchResult> {
  const [{ ControlStore }, { EventLogWriter, generateEvents }, { SecretSealer }, core] = await Promise.all([
    import('@sluice/control'),
    import('@sluice/eventlog'),
    import('@sluice/secrets'),
    import('@sluice/core'),
  ]);
  const { controlTable, eventTables, kmsKey } = await import('../test/helpers/tables.js');
  const workspaceId = `ws_benchw${randomUUID().slice(0, 8)}`;
  const from = core.startOfUtcDay(Date.now()) - core.DAY_MS;
  const to = from + core.DAY_MS - 1;

  const writer = new EventLogWriter({ ...eventTables, explicitRecordedAt: 'unchecked' });
  const ingestStarted = performance.now();
  let ingestedRows = 0;
  let batch: unknown[] = [];
  const dynamoRows = options.dynamoRows ?? options.rows;
  for (const event of generateEvents({
    count: dynamoRows,
    workspaceId,
    from,
    to,
    mix: { email_events: 1 },
  })) {
    batch.push(event);
    if (batch.length === 10_000) {
      ingestedRows += (await writer.ingestEvents(workspaceId, batch)).accepted;
      batch = [];
      if (ingestedRows % 200_000 === 0) log(`  ingested ${ingestedRows.toLocaleString('en-US')} events`);
    }
  }
  if (batch.length > 0) ingestedRows += (await writer.ingestEvents(workspaceId, batch)).accepted;
  const ingestMs = performance.now() - ingestStarted;
  log(`  ingested ${ingestedRows.toLocaleString('en-US')} events in ${(ingestMs / 1000).toFixed(1)} s`);

  const destinationId = `exp_bench${randomUUID().replaceAll('-', '').slice(0, 16)}`;
  const endpoint = process.env.SLUICE_LOCAL_S3_ENDPOINT as string;
  const sealer = new SecretSealer(kmsKey);
  const startFrom = new Date(from).toISOString();
  await new ControlStore(controlTable).createDestination({
    ...newDestination({
      workspaceId,
      id: destinationId,
      name: 'Writer bench',
      provider: 's3',
      bucket: 'local-exports',
      region: 'us-east-1',
      endpoint,
      pathPrefix: `bench-writer/${destinationId}`,
      accessKeyId: 'S3RVER',
      secret: await sealer.seal('S3RVER', { workspaceId, destinationId }),
      datasets: ['email_events'],
      frequency: 'every_15_minutes',
      startFrom,
      now: new Date(),
    }),
    status: 'idle',
    manualRunQueued: false,
    nextRunAt: null,
  });
  // nextRunAt null: the destination is off the due index, so no scheduler runs it beside the bench.

  const base = { workspaceId, destinationId, configVersion: 1, fromMs: from };
  const runs: WriterFigures[] = [];
  for (const source of ['dynamodb-local', 'memory'] as const) {
    const total = source === 'memory' ? options.rows : dynamoRows;
    const small = Math.min(options.smallRows, Math.floor(total / 2));
    const smallTo = from + Math.max(1, Math.round(((to - from) * small) / total));
    for (const [toMs, rows] of [
      [smallTo, small],
      [to, total],
    ] as const) {
      const figures = await runChild({ ...base, source, toMs, rows });
      log(
        `  ${source.padEnd(14)} ${figures.rows.toLocaleString('en-US').padStart(9)} rows, ${figures.files} files: ` +
          `${Math.round(figures.rowsPerSecond).toLocaleString('en-US')} rows/s, peak RSS ${figures.peakRssMb.toFixed(0)} MB ` +
          `(baseline ${figures.baselineRssMb.toFixed(0)} MB), peak heap ${figures.peakHeapMb.toFixed(0)} MB`,
      );
      runs.push(figures);
    }
  }
  return { ingestMs, ingestedRows, runs };
}

if (process.env.SLUICE_BENCH_CHILD !== undefined && process.argv[1] === fileURLToPath(import.meta.url)) {
  child(JSON.parse(process.env.SLUICE_BENCH_CHILD) as ChildTask).catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
