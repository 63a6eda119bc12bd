import { randomBytes } from 'node:crypto';
import { DAY_MS } from '@sluice/core';
import type { LocalServices } from '../packages/local/src/services.js';

const MINUTE_MS = 60_000;

/** Options of {@link runWholeExportBench}. */
export interface WholeExportBenchOptions {
  /** Events to ingest and export. @default 1,000,000 */
  rows?: number;
  /** Days of recorded time they span (each UTC day is at least one window). @default 3 */
  days?: number;
  /** Progress lines. @default console.log */
  log?: (line: string) => void;
}

/** What {@link runWholeExportBench} measured. */
export interface WholeExportBenchResult {
  rows: number;
  /** Ingest through `EventLogWriter` into DynamoDB Local (not part of the export figure). */
  ingestMs: number;
  /** From the first Dispatch tick until the destination is caught up. */
  exportMs: number;
  /** Rows exported per second of `exportMs`. */
  rowsPerSecond: number;
  /** ExportRun executions that ran. */
  runs: number;
  files: number;
  bytes: number;
}

/**
 * A whole local export, as `npm start` runs it: `rows` generated email events are ingested into the local
 * event log, an export of them is created through the API (startFrom before the first), then the Dispatch
 * definition of the synthesized template runs under aws-local-stepfunctions, tick after tick, until the
 * destination is caught up. Reports the wall time and rows/s of the export; asserts nothing about time.
 *
 * Uses the local services of the environment when `SLUICE_CONTROL_TABLE` is set (as in `npm run bench`
 * started beside them, or the tests), else starts its own and stops them after.
 */
export async function runWholeExportBench(
  options: WholeExportBenchOptions = {},
): Promise<WholeExportBenchResult> {
  const rows = options.rows ?? 1_000_000;
  const days = options.days ?? 3;
  const log = options.log ?? ((line: string) => console.log(line));
  let services: LocalServices | undefined;
  if (!process.env.SLUICE_CONTROL_TABLE) {
    const { startLocalServices } = await import('../packages/local/src/services.js');
    services = await startLocalServices();
    for (const [name, value] of Object.entries(services.env)) process.env[name] = value;
  }
  // Loaded after the environment is set: these read it at load.
  const [{ ControlStore }, { EventLogWriter, generateEvents }, { startApiServer }, { LocalWorkflows }, s3] =
    await Promise.all([
      import('@sluice/control'),
      import('@sluice/eventlog'),
      import('../packages/local/src/http-adapter.js'),
      import('../packages/local/src/stepfunctions.js'),
      import('../packages/local/src/s3-local.js'),
    ]);
  // Read once the services' environment is set.
  const { controlTable, eventTables } = await import('../test/helpers/tables.js');
  const server = await startApiServer({ host: '127.0.0.1', port: 0 });
  try {
    const workspaceId = `ws_bench${randomBytes(4).toString('hex')}`;
    const store = new ControlStore(controlTable);
    await store.ensureWorkspace(workspaceId, 'Benchmark');
    const { apiKey } = await store.createApiKey({ workspaceId, role: 'owner' });

    // Ingest
    const to = Date.now() - 5 * MINUTE_MS;
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
        if (ingested % 100_000 === 0) log(`  ingested ${ingested.toLocaleString('en-US')} events`);
      }
    }
    if (batch.length > 0) ingested += (await writer.ingestEvents(workspaceId, batch)).accepted;
    const ingestMs = performance.now() - ingestStarted;

    // Create the export through the API
    const response = await fetch(`${server.url}/api/v1/data-exports`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'Benchmark',
        provider: 's3',
        bucket: s3.LOCAL_BUCKET,
        endpoint: process.env.SLUICE_LOCAL_S3_ENDPOINT,
        pathPrefix: `bench/${workspaceId}`,
        accessKeyId: s3.LOCAL_S3_CREDENTIALS.accessKeyId,
        secretAccessKey: s3.LOCAL_S3_CREDENTIALS.secretAccessKey,
        datasets: ['email_events'],
        frequency: 'every_15_minutes',
        startFrom: new Date(from - MINUTE_MS).toISOString(),
      }),
    });
    const created = (await response.json()) as { dataExport?: { id: string } };
    if (response.status !== 201 || !created.dataExport) {
      throw new Error(`creating the benchmark export failed: HTTP ${response.status}`);
    }
    const destinationId = created.dataExport.id;

    // Export: Dispatch ticks until a tick starts no run for the destination
    const workflows = await LocalWorkflows.create({ log: (line) => log(`  [sfn] ${line}`) });
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
    if (exported !== ingested) throw new Error(`exported ${exported} rows of ${ingested}`);
    const result = {
      rows: exported,
      ingestMs,
      exportMs,
      rowsPerSecond: exported / (exportMs / 1000),
      runs,
      files,
      bytes,
    };
    log(
      `whole export: ${exported.toLocaleString('en-US')} rows in ${(exportMs / 1000).toFixed(1)} s ` +
        `(${Math.round(result.rowsPerSecond).toLocaleString('en-US')} rows/s), ${runs} run(s), ${files} files, ` +
        `${(bytes / 1e6).toFixed(1)} MB; ingest took ${(ingestMs / 1000).toFixed(1)} s`,
    );
    return result;
  } finally {
    await server.close();
    await services?.stop();
  }
}
