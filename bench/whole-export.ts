import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';
import { S3Client } from '@aws-sdk/client-s3';
import { DAY_MS, type Frequency, gridExportLimit, MAX_LINES_PER_FILE } from '@sluice/core';
import type { LocalServices } from '@sluice/devstack';
import type { GeneratedEvent } from '@sluice/eventlog';
import { objectHashes } from './resume.js';

const MINUTE_MS = 60_000;
/** Rows the encoder alone is timed on (in 50,000-line files): enough for a steady rate. */
const ENCODER_ROWS = 200_000;

/** How the hot log holds the rows: segments (today's writer) or one item a row (before segments). */
export type Design = 'segments' | 'per-row';
const DESIGNS: readonly Design[] = ['segments', 'per-row'];
/** Rows of each design's untimed warm-up export (its own workspace, the first frequency). */
const WARM_UP_ROWS = 2_000;

interface Workspace {
  id: string;
  apiKey: string;
}

/** Options of {@link runWholeExportBench}. */
export interface WholeExportBenchOptions {
  /** Events to ingest and export. @default 1,000,000 */
  rows?: number;
  /** Days of recorded time they span (each UTC day is at least one window). @default 3 */
  days?: number;
  /** One export of all the rows per frequency, in this order. @default every_15_minutes, hourly */
  frequencies?: readonly Frequency[];
  /** The DynamoDB Local process, whose CPU time is reported beside the export's. */
  dynamodbPid?: number;
  /** When set, a CPU profile of each export (this process) is written there. */
  profileDir?: string;
  /** Progress lines. @default console.log */
  log?: (line: string) => void;
}

/** One export of every row. */
export interface WholeExportFigures {
  design: Design;
  frequency: Frequency;
  rows: number;
  /** From the first Dispatch tick until the destination is caught up. */
  exportMs: number;
  /** Rows exported per second of `exportMs`. */
  rowsPerSecond: number;
  /** ExportRun executions that ran. */
  runs: number;
  files: number;
  bytes: number;
  /** CPU seconds of this process (API, workflows, writers, s3rver) during the export. */
  nodeCpuSeconds: number;
  /** CPU seconds of the DynamoDB Local process during the export, when its pid is known. */
  dynamodbCpuSeconds?: number;
  /** sha256 of each file written, by its key below the export's path prefix. */
  fileHashes: Map<string, string>;
}

/** The two designs' exports at one frequency. */
export interface DesignComparison {
  frequency: Frequency;
  /** Rows/s of the segments' export over the per-row items'. */
  ratio: number;
  /**
   * CPU a row (this process and DynamoDB Local) of the segments' export over the per-row items': the steadier
   * figure on a shared machine (below 1: segments use less). Undefined when DynamoDB Local's pid is unknown.
   */
  cpuRatio?: number;
  /** Both wrote the same files (names and sha256). */
  identical: boolean;
  /** When they differ: the first file whose name or bytes differ (its key below the prefix). */
  firstDifference?: string;
}

/** What {@link runWholeExportBench} measured. */
export interface WholeExportBenchResult {
  rows: number;
  /** Ingest through `EventLogWriter` into DynamoDB Local (not part of the export figures). */
  ingestMs: number;
  /** The same rows written as per-row items (BatchWriteItem, one item a row; not part of the export figures). */
  perRowSeedMs: number;
  /** Each frequency's export of each design, in the order they ran. */
  exports: WholeExportFigures[];
  comparisons: DesignComparison[];
  /** The encoder alone (`encodeJsonlGzip`, 50,000-line files, this process) in the same run. */
  encoderRowsPerSecond: number;
}

/** CPU seconds (user + system) a process has used so far, from /proc; undefined where there is none. */
function processCpuSeconds(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime and stime are fields 14 and 15 of stat(5), in clock ticks (100 a second on Linux).
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return undefined;
  }
}

/** Rows/s of the encoder alone: `rows` generated email lines encoded in files of 50,000 lines. */
async function encoderRate(rows: number): Promise<number> {
  const [{ generatedLine, generateEvents }, { encodeJsonlGzip }] = await Promise.all([
    import('@sluice/eventlog'),
    import('@sluice/sinks'),
  ]);
  const to = Date.parse('2026-09-30T00:00:00.000Z');
  let ms = 0;
  for (let start = 0; start < rows; start += MAX_LINES_PER_FILE) {
    const count = Math.min(MAX_LINES_PER_FILE, rows - start);
    const lines: string[] = [];
    for (const event of generateEvents({
      count,
      seed: 7 + start,
      from: to - DAY_MS,
      to,
      mix: { email_events: 1 },
    }))
      lines.push(generatedLine(event));
    const started = performance.now();
    const encoding = encodeJsonlGzip(lines);
    for await (const _ of encoding.stream);
    await encoding.done;
    ms += performance.now() - started;
  }
  return rows / (ms / 1000);
}

/**
 * A whole local export, as `npm start` runs it: `rows` generated email events are ingested into the local
 * event log once, then exported once per frequency: an export is created through the API (startFrom before
 * the first row) and the Dispatch definition of the synthesized template runs under aws-local-stepfunctions,
 * tick after tick, until the destination is caught up. The rows end on a whole hour older than the export
 * lag, so every frequency exports all of them. Reports each export's wall time, rows/s and CPU time (this
 * process and DynamoDB Local), and the encoder's rate alone in the same run; asserts nothing about time.
 *
 * The same rows are stored twice, in two workspaces: through `EventLogWriter` (segments), and as the event log
 * stored them before segments (one item a row in its shard's partition, `perRowRequests` of
 * bench/segments-local.ts, in a workspace with no per-row marker, so the reader reads the shards). Each
 * frequency exports both (the design that goes first alternates), compares their files (names and sha256)
 * and gives the ratio of rows/s segments / per-row.
 *
 * Uses the local services of the environment when `SLUICE_CONTROL_TABLE` is set (as in `npm run bench`
 * started beside them, or the tests), else starts its own and stops them after.
 */
export async function runWholeExportBench(
  options: WholeExportBenchOptions = {},
): Promise<WholeExportBenchResult> {
  const rows = options.rows ?? 1_000_000;
  const days = options.days ?? 3;
  const frequencies = options.frequencies ?? ['every_15_minutes', 'hourly'];
  const log = options.log ?? ((line: string) => console.log(line));
  let services: LocalServices | undefined;
  let dynamodbPid = options.dynamodbPid;
  if (!process.env.SLUICE_CONTROL_TABLE) {
    const { startLocalServices } = await import('@sluice/devstack');
    services = await startLocalServices({ dynamodbQuickStart: false });
    for (const [name, value] of Object.entries(services.env)) process.env[name] = value;
    dynamodbPid = services.dynamodb.pid;
  }
  // Loaded after the environment is set: these read it at load.
  const [
    { ControlStore },
    { batchWrite, defaultEventLogClient, EventLogWriter, generateEvents },
    { startApiServer, localWorkflows },
    s3,
    { perRowRequests },
    { CONNECTION_TEST_KEY },
  ] = await Promise.all([
    import('@sluice/control'),
    import('@sluice/eventlog'),
    import('@sluice/local'),
    import('@sluice/devstack'),
    import('./segments-local.js'),
    import('@sluice/sinks'),
  ]);
  // Read once the services' environment is set.
  const { controlTable, eventTables } = await import('../test/helpers/tables.js');
  const server = await startApiServer({ host: '127.0.0.1', port: 0 });
  const bucket = new S3Client({
    endpoint: process.env.SLUICE_LOCAL_S3_ENDPOINT,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: s3.LOCAL_S3_CREDENTIALS,
  });
  try {
    const store = new ControlStore(controlTable);
    const suffix = randomBytes(4).toString('hex');
    /** A workspace of its own with an owner key: one a design, timed, and one a design for the warm-up. */
    const workspace = async (name: string): Promise<Workspace> => {
      const id = `ws_bench${name}${suffix}`;
      await store.ensureWorkspace(id, 'Benchmark');
      return { id, apiKey: (await store.createApiKey({ workspaceId: id, role: 'owner' })).apiKey };
    };
    const workspaces = { segments: await workspace('s'), 'per-row': await workspace('r') };
    const warmUp = { segments: await workspace('ws'), 'per-row': await workspace('wr') };

    // The same generated rows into both, ending on a whole hour that every frequency may export now
    const to = gridExportLimit(Date.now(), 'hourly');
    const from = to - days * DAY_MS;
    const writer = new EventLogWriter({ ...eventTables, explicitRecordedAt: 'unchecked' });
    const client = defaultEventLogClient();
    /**
     * Stores `count` generated rows (always the same ones) in calls of 10,000: through `EventLogWriter`
     * (segments), or as the event log stored them before segments: one item a row in its shard's partition.
     * The per-row workspace gets no per-row marker (only `EventLogWriter` records one), so its readers read the
     * shards. Returns the rows stored and the time taken.
     */
    const seed = async (design: Design, workspaceId: string, count: number) => {
      const started = performance.now();
      const put = async (batch: GeneratedEvent[]): Promise<number> => {
        if (design === 'segments') {
          return (await writer.ingestEvents(workspaceId, batch as unknown as Record<string, unknown>[]))
            .accepted;
        }
        await batchWrite(client, eventTables.eventsTable, perRowRequests(workspaceId, batch));
        return batch.length;
      };
      let batch: GeneratedEvent[] = [];
      let stored = 0;
      for (const event of generateEvents({ count, seed: 1, from, to, mix: { email_events: 1 } })) {
        batch.push(event);
        if (batch.length === 10_000) {
          stored += await put(batch);
          batch = [];
          if (stored % 200_000 === 0) log(`  ${design}: stored ${stored.toLocaleString('en-US')} events`);
        }
      }
      if (batch.length > 0) stored += await put(batch);
      return { stored, ms: performance.now() - started };
    };
    const { stored: ingested, ms: ingestMs } = await seed('segments', workspaces.segments.id, rows);
    const perRow = await seed('per-row', workspaces['per-row'].id, rows);
    if (perRow.stored !== ingested) throw new Error(`per-row: stored ${perRow.stored} rows of ${ingested}`);
    const perRowSeedMs = perRow.ms;
    const warmUpRows = Math.min(rows, WARM_UP_ROWS);
    for (const design of DESIGNS) await seed(design, warmUp[design].id, warmUpRows);

    const workflows = await localWorkflows({ log: (line) => log(`  [sfn] ${line}`) });
    const exportAll = async (
      design: Design,
      frequency: Frequency,
      { id: workspaceId, apiKey }: Workspace,
      expected: number,
    ): Promise<WholeExportFigures> => {
      const pathPrefix = `bench/${workspaceId}/${frequency}`;
      const response = await fetch(`${server.url}/api/v1/data-exports`, {
        method: 'POST',
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          name: `Benchmark ${frequency}`,
          provider: 's3',
          bucket: s3.LOCAL_BUCKET,
          endpoint: process.env.SLUICE_LOCAL_S3_ENDPOINT,
          pathPrefix,
          accessKeyId: s3.LOCAL_S3_CREDENTIALS.accessKeyId,
          secretAccessKey: s3.LOCAL_S3_CREDENTIALS.secretAccessKey,
          datasets: ['email_events'],
          frequency,
          startFrom: new Date(from - MINUTE_MS).toISOString(),
        }),
      });
      const created = (await response.json()) as { dataExport?: { id: string } };
      if (response.status !== 201 || !created.dataExport) {
        throw new Error(`creating the benchmark export failed: HTTP ${response.status}`);
      }
      const destinationId = created.dataExport.id;

      // Export: Dispatch ticks until a tick starts no run for the destination
      const profiler = options.profileDir !== undefined ? new Session() : undefined;
      if (profiler) {
        profiler.connect();
        await profiler.post('Profiler.enable');
        await profiler.post('Profiler.start');
      }
      const cpuBefore = process.cpuUsage();
      const dynamodbBefore = processCpuSeconds(dynamodbPid);
      const exportStarted = performance.now();
      let runs = 0;
      let files = 0;
      let bytes = 0;
      let exported = 0;
      for (let tick = 0; tick < 50; tick++) {
        const outcome = await workflows.runDispatch();
        const ours = outcome.runs.filter(
          (run) => (run.input as { destinationId?: string } | null)?.destinationId === destinationId,
        );
        if (ours.length === 0 && tick > 0) break;
        for (const run of ours) {
          if (run.status === 'failed') throw new Error(`an export run failed: ${run.error?.Error}`);
          runs += 1;
          files += run.files;
          bytes += run.bytes;
          exported += run.rows;
        }
      }
      const exportMs = performance.now() - exportStarted;
      const cpu = process.cpuUsage(cpuBefore);
      const dynamodbAfter = processCpuSeconds(dynamodbPid);
      if (profiler && options.profileDir !== undefined) {
        const { profile } = await profiler.post('Profiler.stop');
        const path = join(options.profileDir, `whole-export-${design}-${frequency}-${Date.now()}.cpuprofile`);
        await writeFile(path, JSON.stringify(profile));
        profiler.disconnect();
        log(`  CPU profile: ${path}`);
      }
      if (exported !== expected)
        throw new Error(`${design} ${frequency}: exported ${exported} rows of ${expected}`);
      return {
        design,
        frequency,
        rows: exported,
        exportMs,
        rowsPerSecond: exported / (exportMs / 1000),
        runs,
        files,
        bytes,
        nodeCpuSeconds: (cpu.user + cpu.system) / 1e6,
        ...(dynamodbBefore !== undefined && dynamodbAfter !== undefined
          ? { dynamodbCpuSeconds: dynamodbAfter - dynamodbBefore }
          : {}),
        fileHashes: await objectHashes(bucket, pathPrefix, { metadataWithoutPrefix: true }),
      };
    };

    // Untimed: the first export of the process pays for loading and JIT; each design's read path warmed once.
    for (const design of DESIGNS) await exportAll(design, frequencies[0]!, warmUp[design], warmUpRows);

    const exports: WholeExportFigures[] = [];
    const comparisons: DesignComparison[] = [];
    for (const [i, frequency] of frequencies.entries()) {
      // Alternating which design goes first, so neither always has the warmer process.
      const order = i % 2 === 0 ? DESIGNS : [...DESIGNS].reverse();
      const figures = {} as Record<Design, WholeExportFigures>;
      for (const design of order) {
        figures[design] = await exportAll(design, frequency, workspaces[design], ingested);
        exports.push(figures[design]);
      }
      const cpuOf = (f: WholeExportFigures) =>
        f.dynamodbCpuSeconds !== undefined ? f.nodeCpuSeconds + f.dynamodbCpuSeconds : undefined;
      const cpu = { segments: cpuOf(figures.segments), 'per-row': cpuOf(figures['per-row']) };
      const a = figures.segments.fileHashes;
      const b = figures['per-row'].fileHashes;
      // The exported files: the connection test is the API's check of the destination when it is created.
      const firstDifference = [...a.keys(), ...b.keys()].find(
        (key) => key !== `/${CONNECTION_TEST_KEY}` && a.get(key) !== b.get(key),
      );
      comparisons.push({
        frequency,
        ratio: figures.segments.rowsPerSecond / figures['per-row'].rowsPerSecond,
        ...(cpu.segments !== undefined && cpu['per-row'] !== undefined
          ? { cpuRatio: cpu.segments / cpu['per-row'] }
          : {}),
        identical: a.size > 1 && a.size === b.size && firstDifference === undefined,
        ...(firstDifference !== undefined ? { firstDifference } : {}),
      });
    }
    const encoderRowsPerSecond = await encoderRate(Math.min(rows, ENCODER_ROWS));
    return { rows: ingested, ingestMs, perRowSeedMs, exports, comparisons, encoderRowsPerSecond };
  } finally {
    bucket.destroy();
    await server.close();
    await services?.stop();
  }
}
