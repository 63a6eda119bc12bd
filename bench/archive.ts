/**
 * Event archive bench (`npm run bench`, skip with `archive`): `BENCH_ARCHIVE_ROWS` (default the smaller of
 * BENCH_ROWS and 200,000) email events spread over 10 past hours are written to DynamoDB Local, then, in a
 * child process (so its CPU time is Sluice's alone: DynamoDB Local and s3rver run in other processes):
 * 1. read once from the hot log (the reference: the compaction reads the same way),
 * 2. compacted into the local archive bucket (s3rver): rows/s, CPU seconds, objects (PUT requests), bytes,
 * 3. read back from the archive as an export behind the hot log would (ArchivedEventSource): rows/s,
 * 4. exported as a full-history backfill does: `writeWindow` of a backfill run (progress on the backfill,
 *    fenced by its slot) reading the archive, encoding and writing the 10 hourly windows to the local
 *    bucket, beside the regular export of the same windows from the hot log: rows/s and CPU, as a ratio.
 * The cost per million rows follows from the figures measured, at the list prices printed with them.
 */
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { printBenchResult, runBenchChild } from './child.js';

const HOUR = 3_600_000;
const HOURS = 10;
/** us-east-1 list prices (December 2026). */
export const PRICES = {
  /** S3 Standard storage, per GB-month, and the lifecycle's later classes. */
  standardGbMonth: 0.023,
  infrequentAccessGbMonth: 0.0125,
  glacierInstantGbMonth: 0.004,
  /** S3 PUT (and LIST) per 1,000 requests; GET per 1,000 requests. */
  putPerThousand: 0.005,
  getPerThousand: 0.0004,
  /** Lambda on arm64 (the functions' architecture), per GB-second. */
  lambdaArmGbSecond: 0.0000133334,
  /** DynamoDB on-demand, per million read request units (an eventually consistent read: 8 KB a unit). */
  dynamoReadPerMillion: 0.125,
} as const;
/** The archive function's memory (infra/stateless-stack.ts): one full vCPU. */
const ARCHIVE_FUNCTION_MB = 1769;

/** The figures of one archive bench. */
export interface ArchiveFigures {
  rows: number;
  /** Bytes of the rows' JSON lines (what the hot log reads return, before key attributes). */
  lineBytes: number;
  objects: number;
  bytes: number;
  hotReadRowsPerSecond: number;
  compactionRowsPerSecond: number;
  compactionCpuSeconds: number;
  archiveReadRowsPerSecond: number;
  /** The full-history backfill's writer, from the archive, and the regular export's, from the hot log. */
  backfill: WriterRun;
  regular: WriterRun;
}

interface WriterRun {
  rows: number;
  files: number;
  bytes: number;
  seconds: number;
  cpuSeconds: number;
}

function environment(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: the bench starts the local services first`);
  return value;
}

/** CPU seconds (user and system) of this process since `start`. */
function cpuSince(start: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1e6;
}

/** Runs the archive bench in a child process against the local services; prints and returns its figures. */
export async function runArchiveBench(rows: number, log: (line: string) => void): Promise<ArchiveFigures> {
  const script = fileURLToPath(import.meta.url);
  const figures = await runBenchChild<ArchiveFigures>(
    'archive bench',
    process.execPath,
    ['--openssl-legacy-provider', '--import', 'tsx', script],
    { SLUICE_BENCH_ARCHIVE_CHILD: String(rows), POWERTOOLS_METRICS_DISABLED: 'true' },
  );
  printArchiveBench(figures, log);
  return figures;
}

/** The child: every step above, in this process; prints `BENCH_RESULT <json>`. */
async function child(rows: number): Promise<void> {
  const [archiveModule, control, core, engine, eventlog, { SecretSealer }] = await Promise.all([
    import('@sluice/archive'),
    import('@sluice/control'),
    import('@sluice/core'),
    import('@sluice/engine'),
    import('@sluice/eventlog'),
    import('@sluice/secrets'),
  ]);
  const tables = {
    eventsTable: environment('SLUICE_EVENTS_TABLE'),
    subscribersTable: environment('SLUICE_SUBSCRIBERS_TABLE'),
  };
  const controlTable = { tableName: environment('SLUICE_CONTROL_TABLE') };
  const endpoint = environment('SLUICE_LOCAL_S3_ENDPOINT');
  const archive = new archiveModule.ArchiveBucket({
    bucket: environment('SLUICE_ARCHIVE_BUCKET'),
    client: archiveModule.createArchiveClient({ localEndpoint: endpoint }),
  });
  const workspaceId = `ws_bench_${randomUUID().slice(0, 8)}`;
  const firstHour = Math.floor(Date.now() / HOUR) * HOUR - (HOURS + 1) * HOUR;
  const writer = new eventlog.EventLogWriter({ ...tables, explicitRecordedAt: 'unchecked' });
  const events = eventlog.generateEvents({
    count: rows,
    workspaceId,
    seed: 13,
    from: firstHour,
    to: firstHour + HOURS * HOUR - 1,
    mix: { email_events: 1 },
  });
  let batch: Record<string, unknown>[] = [];
  for (const event of events) {
    batch.push(event as unknown as Record<string, unknown>);
    if (batch.length === 5_000) {
      await writer.ingestEvents(workspaceId, batch);
      batch = [];
    }
  }
  if (batch.length > 0) await writer.ingestEvents(workspaceId, batch);

  // 1. The hot log read alone.
  const hot = new eventlog.EventLogReader(tables);
  const from = firstHour - 1;
  const to = firstHour + HOURS * HOUR - 1;
  let t0 = performance.now();
  let read = 0;
  let lineBytes = 0;
  for await (const page of hot.readWindow(workspaceId, 'email_events', from, to)) {
    read += page.lines.length;
    for (const line of page.lines) lineBytes += Buffer.byteLength(line);
  }
  const hotSeconds = (performance.now() - t0) / 1000;

  // 2. The compaction. The hot log "keeps" exactly the hours written, so it starts at the first.
  const cursors = new control.ArchiveCursorStore(controlTable);
  const hotRetentionMs = Date.now() - firstHour;
  t0 = performance.now();
  const cpu = process.cpuUsage();
  const compacted = await new archiveModule.ArchiveCompactor({
    hot,
    archive,
    cursors,
    hotRetentionMs,
  }).compactDataset(workspaceId, 'email_events');
  const compactionCpuSeconds = cpuSince(cpu);
  const compactSeconds = (performance.now() - t0) / 1000;

  // 3. Read back as a late export would: the hot log's retention over, every hour from the archive.
  const late = new archiveModule.ArchivedEventSource({
    hot,
    archive,
    coverage: cursors,
    hotRetentionMs: 60_000,
  });
  t0 = performance.now();
  let fromArchive = 0;
  for await (const page of late.readWindow(workspaceId, 'email_events', from, to))
    fromArchive += page.lines.length;
  const archiveSeconds = (performance.now() - t0) / 1000;

  // 4. The writer of a regular run (hot log) and of a full-history backfill run (archive), same windows.
  const destinationId = `exp_bench${randomUUID().replaceAll('-', '').slice(0, 16)}`;
  const sealer = new SecretSealer({ keyId: environment('SLUICE_KMS_KEY_ID') });
  await new control.ControlStore(controlTable).createDestination({
    ...core.newDestination({
      workspaceId,
      id: destinationId,
      name: 'Archive bench',
      provider: 's3',
      bucket: 'local-exports',
      region: 'us-east-1',
      endpoint,
      pathPrefix: `bench-archive/${destinationId}`,
      accessKeyId: 'S3RVER',
      secret: await sealer.seal('S3RVER', { workspaceId, destinationId }),
      datasets: ['email_events'],
      frequency: 'hourly',
      startFrom: new Date(firstHour).toISOString(),
      now: new Date(),
    }),
    status: 'idle',
    manualRunQueued: false,
    nextRunAt: null,
  });
  const deps = {
    controlStore: new control.ControlStore(controlTable),
    cursors: new control.CursorStore(controlTable),
    backfills: new control.BackfillStore(controlTable),
    sealer,
    bucketWriterFactory: engine.createBucketWriterFactory({
      allowedEndpoints: new Set([new URL(endpoint).origin]),
    }),
    metrics: engine.noRunMetrics,
  };
  const item = {
    dataset: 'email_events' as const,
    kind: 'events' as const,
    fromMs: from,
    toMs: to,
    stepMs: HOUR,
  };
  const run = {
    workspaceId,
    destinationId,
    startedAt: new Date().toISOString(),
    configVersion: 1,
    deadlineMs: Number.POSITIVE_INFINITY,
  };
  const measure = async (
    runRef: typeof run & { runId: string; leaseToken: string; backfillId?: string },
    eventSource: import('@sluice/eventlog').EventSource,
  ): Promise<WriterRun> => {
    const started = performance.now();
    const startCpu = process.cpuUsage();
    const result = await engine.writeWindow({ run: runRef, item }, { ...deps, eventSource });
    if (result.status !== 'written' || result.rows !== rows) {
      throw new Error(`archive bench: the writer ${result.status}, ${result.rows} of ${rows} rows`);
    }
    return {
      rows: result.rows,
      files: result.files,
      bytes: result.bytes,
      seconds: (performance.now() - started) / 1000,
      cpuSeconds: cpuSince(startCpu),
    };
  };
  const lease = await new control.LeaseStore(controlTable).claim({
    workspaceId,
    destinationId,
    runId: 'run_regular',
    token: randomUUID(),
    startedAt: run.startedAt,
    nowMs: Date.now(),
    durationMs: HOUR,
  });
  if (lease === undefined) throw new Error('archive bench: the lease is held');
  const regular = await measure({ ...run, runId: 'run_regular', leaseToken: lease.token }, hot);
  // The backfill: stored and claimed as a backfill run claims it (its writer saves progress on it).
  const backfill = {
    id: core.backfillId(Date.now(), randomUUID().replaceAll('-', '')),
    workspaceId,
    destinationId,
    status: 'queued' as const,
    fullHistory: true,
    datasets: ['email_events' as const],
    from: new Date(firstHour).toISOString(),
    to: new Date(to).toISOString(),
    range: { fromMs: from, toMs: to, stepMs: HOUR },
    doneThroughMs: {},
    reached: { email_events: {} },
    progress: { email_events: { rows: 0, files: 0, bytes: 0, windowsDone: 0, windowsTotal: HOURS } },
    attempts: 0,
    error: null,
    createdAt: run.startedAt,
    startedAt: null,
    finishedAt: null,
    updatedAt: run.startedAt,
  };
  await deps.backfills.create(backfill);
  const slot = await deps.backfills.claim(
    { workspaceId, destinationId, backfillId: backfill.id, datasets: backfill.datasets },
    { backfillId: backfill.id, runId: 'run_backfill', token: randomUUID(), expiresAtMs: Date.now() + HOUR },
    new Date(),
  );
  if (slot === undefined) throw new Error('archive bench: the backfill slot is held');
  const fromArchiveWriter = await measure(
    { ...run, runId: 'run_backfill', leaseToken: slot.token, backfillId: backfill.id },
    late,
  );

  if (read !== rows || compacted.rows !== rows || fromArchive !== rows) {
    throw new Error(
      `archive bench: wrote ${rows}, hot read ${read}, archived ${compacted.rows}, read back ${fromArchive}`,
    );
  }
  const figures: ArchiveFigures = {
    rows,
    lineBytes,
    objects: compacted.objects,
    bytes: compacted.bytes,
    hotReadRowsPerSecond: rows / hotSeconds,
    compactionRowsPerSecond: rows / compactSeconds,
    compactionCpuSeconds,
    archiveReadRowsPerSecond: rows / archiveSeconds,
    backfill: fromArchiveWriter,
    regular,
  };
  printBenchResult(figures);
}

/** Prints the figures, the assumptions, and the cost per million rows they imply. */
export function printArchiveBench(f: ArchiveFigures, log: (line: string) => void): void {
  const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
  const usd = (n: number, digits = 4) => `$${n.toFixed(digits)}`;
  const perMillion = 1_000_000 / f.rows;
  const gbPerMillion = (f.bytes * perMillion) / 1e9;
  const putsPerMillion = f.objects * perMillion;
  const cpuPerMillion = f.compactionCpuSeconds * perMillion;
  const wallPerMillion = perMillion * (f.rows / f.compactionRowsPerSecond);
  const gb = ARCHIVE_FUNCTION_MB / 1024;
  const standardMonth = gbPerMillion * PRICES.standardGbMonth;
  // Two years with the lifecycle: 1 month Standard, 2 months Standard-IA, 21 months Glacier IR.
  const twoYears =
    gbPerMillion *
    (PRICES.standardGbMonth + 2 * PRICES.infrequentAccessGbMonth + 21 * PRICES.glacierInstantGbMonth);
  const puts = (putsPerMillion / 1000) * PRICES.putPerThousand;
  const gets = (putsPerMillion / 1000) * PRICES.getPerThousand;
  const lambdaCpu = cpuPerMillion * gb * PRICES.lambdaArmGbSecond;
  const lambdaWall = wallPerMillion * gb * PRICES.lambdaArmGbSecond;
  // The compaction reads every row once more from the hot log (item ≈ line + ~100 B of keys and attributes).
  const readUnits = ((f.lineBytes + 100 * f.rows) * perMillion) / 8192;
  const dynamo = (readUnits / 1e6) * PRICES.dynamoReadPerMillion;
  log(
    `  Assumptions (us-east-1 list prices): S3 Standard ${usd(PRICES.standardGbMonth, 3)}/GB-month ` +
      `(Standard-IA ${usd(PRICES.infrequentAccessGbMonth, 4)}, Glacier IR ${usd(PRICES.glacierInstantGbMonth, 3)}), ` +
      `PUT ${usd(PRICES.putPerThousand, 3)} and GET ${usd(PRICES.getPerThousand, 4)} per 1,000; Lambda arm64 ` +
      `${usd(PRICES.lambdaArmGbSecond, 10)}/GB-s at the archive function's ${ARCHIVE_FUNCTION_MB} MB; DynamoDB on-demand ` +
      `${usd(PRICES.dynamoReadPerMillion, 3)}/million read units (eventually consistent, 8 KB each, ~100 B of keys a row)`,
  );
  log(
    `  ${fmt(f.rows)} rows in ${HOURS} hours: ${fmt(f.objects)} objects (PUT requests), ${fmt(f.bytes)} bytes stored ` +
      `(${(f.bytes / f.rows).toFixed(1)} B/row, lines ${(f.lineBytes / f.rows).toFixed(0)} B/row)`,
  );
  log(
    `  compaction ${fmt(f.compactionRowsPerSecond)} rows/s, ${cpuPerMillion.toFixed(1)} CPU-s per million rows; hot log read alone ` +
      `${fmt(f.hotReadRowsPerSecond)} rows/s (ratio ${(f.compactionRowsPerSecond / f.hotReadRowsPerSecond).toFixed(2)}x); ` +
      `archive read back ${fmt(f.archiveReadRowsPerSecond)} rows/s (${(f.archiveReadRowsPerSecond / f.hotReadRowsPerSecond).toFixed(2)}x the hot log)`,
  );
  log(
    `  cost per million rows: storage ${gbPerMillion.toFixed(3)} GB = ${usd(standardMonth)} a month in S3 Standard, ` +
      `${usd(twoYears)} for two years with the lifecycle; ${fmt(putsPerMillion)} PUTs = ${usd(puts, 5)}; compaction Lambda ` +
      `${usd(lambdaCpu, 5)} (CPU-bound: ${cpuPerMillion.toFixed(1)} s at one vCPU) to ${usd(lambdaWall, 5)} (the local wall time, ` +
      `${wallPerMillion.toFixed(1)} s); its hot log read ${usd(dynamo, 5)}; read back once (a backfill) ${fmt(putsPerMillion)} GETs = ${usd(gets, 6)}`,
  );
  log(
    `  (PUTs are one per workspace, dataset and hour with rows: ${fmt(8_760)} a year = ` +
      `${usd((8_760 / 1000) * PRICES.putPerThousand, 3)} per active dataset, whatever its rows)`,
  );
  const rate = (run: WriterRun) => run.rows / run.seconds;
  const cpuRate = (run: WriterRun) => run.cpuSeconds * (1_000_000 / run.rows);
  log(
    `  full-history backfill writer (archive → jsonl.gz → local bucket, ${HOURS} hourly windows, ${f.backfill.files} files): ` +
      `${fmt(rate(f.backfill))} rows/s, ${cpuRate(f.backfill).toFixed(1)} CPU-s per million rows; regular export of the same ` +
      `windows from the hot log ${fmt(rate(f.regular))} rows/s, ${cpuRate(f.regular).toFixed(1)} CPU-s per million; ` +
      `ratio ${(rate(f.backfill) / rate(f.regular)).toFixed(2)}x`,
  );
}

if (
  process.env.SLUICE_BENCH_ARCHIVE_CHILD !== undefined &&
  process.argv[1] === fileURLToPath(import.meta.url)
) {
  child(Number(process.env.SLUICE_BENCH_ARCHIVE_CHILD)).catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
