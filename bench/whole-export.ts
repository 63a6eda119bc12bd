import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';
import { DAY_MS, type Frequency, gridExportLimit, MAX_LINES_PER_FILE } from '@sluice/core';
import type { LocalServices } from '@sluice/devstack';

const MINUTE_MS = 60_000;
/** Rows the encoder alone is timed on (in 50,000-line files): enough for a steady rate. */
const ENCODER_ROWS = 200_000;

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
}

/** What {@link runWholeExportBench} measured. */
export interface WholeExportBenchResult {
  rows: number;
  /** Ingest through `EventLogWriter` into DynamoDB Local (not part of the export figures). */
  ingestMs: number;
  exports: WholeExportFigures[];
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
  const [{ ControlStore }, { EventLogWriter, generateEvents }, { startApiServer, localWorkflows }, s3] =
    await Promise.all([
      import('@sluice/control'),
      import('@sluice/eventlog'),
      import('@sluice/local'),
      import('@sluice/devstack'),
    ]);
  // Read once the services' environment is set.
  const { controlTable, eventTables } = await import('../test/helpers/tables.js');
  const server = await startApiServer({ host: '127.0.0.1', port: 0 });
  try {
    const workspaceId = `ws_bench${randomBytes(4).toString('hex')}`;
    const store = new ControlStore(controlTable);
    await store.ensureWorkspace(workspaceId, 'Benchmark');
    const { apiKey } = await store.createApiKey({ workspaceId, role: 'owner' });

    // Ingest, ending on a whole hour that every frequency may export now
    const to = gridExportLimit(Date.now(), 'hourly');
    const from = to - days * DAY_MS;
    const writer = new EventLogWriter({ ...eventTables, explicitRecordedAt: 'unchecked' });
    const ingestStarted = performance.now();
    let batch: Record<string, unknown>[] = [];
    let ingested = 0;
    for (const event of generateEvents({ count: rows, workspaceId, from, to, mix: { email_events: 1 } })) {
      batch.push(event as unknown as Record<string, unknown>);
      if (batch.length === 10_000) {
        ingested += (await writer.ingestEvents(workspaceId, batch)).accepted;
        batch = [];
        if (ingested % 200_000 === 0) log(`  ingested ${ingested.toLocaleString('en-US')} events`);
      }
    }
    if (batch.length > 0) ingested += (await writer.ingestEvents(workspaceId, batch)).accepted;
    const ingestMs = performance.now() - ingestStarted;

    const workflows = await localWorkflows({ log: (line) => log(`  [sfn] ${line}`) });
    const exports: WholeExportFigures[] = [];
    for (const frequency of frequencies) {
      const response = await fetch(`${server.url}/api/v1/data-exports`, {
        method: 'POST',
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          name: `Benchmark ${frequency}`,
          provider: 's3',
          bucket: s3.LOCAL_BUCKET,
          endpoint: process.env.SLUICE_LOCAL_S3_ENDPOINT,
          pathPrefix: `bench/${workspaceId}/${frequency}`,
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
        const path = join(options.profileDir, `whole-export-${frequency}-${Date.now()}.cpuprofile`);
        await writeFile(path, JSON.stringify(profile));
        profiler.disconnect();
        log(`  CPU profile: ${path}`);
      }
      if (exported !== ingested) throw new Error(`${frequency}: exported ${exported} rows of ${ingested}`);
      exports.push({
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
      });
    }
    const encoderRowsPerSecond = await encoderRate(Math.min(rows, ENCODER_ROWS));
    return { rows: ingested, ingestMs, exports, encoderRowsPerSecond };
  } finally {
    await server.close();
    await services?.stop();
  }
}
