/**
 * `npm run bench`: prints figures, asserts nothing about time (DESIGN.md "Targets").
 * 1. Encode: generated email events to gzip JSON lines, Sluice's encoder beside DuckDB's COPY, as a ratio,
 *    pinned to one core and with the cores free, and a table of gzip levels (bench/encode.ts).
 * 1b. Parquet (bench/parquet.ts, skip with `parquet`): `BENCH_PARQUET_ROWS` (default 200,000, at most
 *    BENCH_ROWS) email events to Parquet by Sluice's encoder (snappy, zstd) beside DuckDB's COPY of the same
 *    rows and the JSON lines encoder, rows/s and bytes a row, and the peak memory of one file and of a window.
 * 2. Writer end to end against DynamoDB Local and s3rver: rows/s and peak memory, small and large window.
 * 3. A whole local export through the Step Functions definitions (bench/whole-export.ts): the same rows
 *    exported with 15-minute and with hourly windows, each with its CPU time, beside the encoder's rate alone;
 *    each from segments and from per-row items (as stored before segments) in the same run: ratio, files compared.
 * 4. Local ingest (bench/ingest.ts): events/s through the CLI and EventLogWriter into DynamoDB Local as
 *    `npm start` runs it, beside raw BatchWriteItem into an in-memory DynamoDB Local, as a ratio.
 * 0. Event log segments (bench/segments.ts, skip with `segments`; alone `npm run bench:segments`): codecs compared,
 *    the segments' item sizes, and the hot log priced per million rows beside today's one item a row.
 * `BENCH_ROWS` (default 1,000,000) sizes the first three parts; `BENCH_DYNAMO_ROWS` (default BENCH_ROWS) the
 * rows ingested into DynamoDB Local for the writer (ingest into the Java emulator is slow);
 * `BENCH_INGEST_EVENTS` (default 20,000) the events of each ingest path; `BENCH_SKIP` skips parts
 * (`segments,encode,writer,whole,ingest,dispatch,keys,api,resume,archive,orgs`).
 * 5. Dispatch: `BENCH_DISPATCH_DESTINATIONS` (default 20,000) due destinations started by one Dispatch
 *    execution (bench/dispatch.ts): starts counted, largest state, destinations/s beside the engine alone.
 * 6. API keys (bench/api-keys.ts, skip with `keys`): one request's key meter beside one GetItem, and a flood
 *    of one key through several instances: allowed, refused, DynamoDB calls.
 * 7. API load (bench/api-load.ts, skip with `api`): list, get and create driven for `BENCH_API_SECONDS`
 *    (default 10) each by
 *    `BENCH_API_CONNECTIONS` (default 8) clients: requests/s, p50/p99 latency, errors, beside the OpenAPI
 *    document route (no key, no database) as the reference.
 * 8. Resume (bench/resume.ts): one window of `BENCH_ROWS` rows (in memory) and of `BENCH_DYNAMO_ROWS` (DynamoDB
 *    Local) written in one pass and by invocations with a budget small enough to stop several times inside
 *    it (`BENCH_RESUME_BUDGET_MS`, default 1: one file an invocation): rows/s, invocations, sha256 of every
 *    file compared (`BENCH_DYNAMO_ROWS=0` measures the memory source only). Skip with `resume`.
 * 9. Event archive (bench/archive.ts, skip with `archive`): `BENCH_ARCHIVE_ROWS` (default the smaller of
 *    BENCH_ROWS and 200,000) rows compacted into the local archive bucket and read back: rows/s beside a plain
 *    hot log read, CPU seconds, bytes and PUTs stored, the cost per million rows at the list prices printed;
 *    and a full-history backfill's writer reading the archive beside the regular export's from the hot log.
 * 10. Organisations (bench/organizations.ts, skip with `orgs`): one window of a parent with
 *    `BENCH_ORG_CHILDREN` (default 50) children, `BENCH_ORG_ROWS` (default 200) click events each, exported by
 *    one export of the parent that includes them (`["*"]`) beside one export per organisation: ExportRuns,
 *    Lambda invocations, DynamoDB and S3 requests and time of each side, and the ratios.

 */
import { existsSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { join } from 'node:path';
import { type LocalOutput, routeLocalOutput, STATE_DIR } from '@sluice/local';
import type { LocalServices } from '@sluice/devstack';
import type { Frequency } from '@sluice/core';

// The packages read their environment at load, so they are imported after the local services are up.
const MAX_LINES_PER_FILE = 50_000;

const rows = Number(process.env.BENCH_ROWS ?? 1_000_000);
const ingestEvents = Number(process.env.BENCH_INGEST_EVENTS ?? 20_000);
const skip = new Set((process.env.BENCH_SKIP ?? '').split(',').filter(Boolean));
let output: LocalOutput | undefined;
const log = (line: string): void => (output ? output.print(line) : console.log(line));
const fmt = (n: number): string => Math.round(n).toLocaleString('en-US');

async function main(): Promise<void> {
  // The SDK's notice about Node 22 would be the loudest line of the output; the Lambdas run Node 22.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  if (!Number.isInteger(rows) || rows < 1000)
    throw new Error('BENCH_ROWS must be an integer of at least 1000');
  if (!Number.isInteger(ingestEvents) || ingestEvents < 1000)
    throw new Error('BENCH_INGEST_EVENTS must be an integer of at least 1000');
  output = routeLocalOutput({
    verbose: process.env.BENCH_VERBOSE === '1',
    logDir: join(STATE_DIR, 'logs', 'bench'),
  });
  log(`Sluice benchmark: ${fmt(rows)} rows, node ${process.version}`);
  log(
    `Load average at start: ${loadavg()
      .map((n) => n.toFixed(2))
      .join(', ')} (${availableParallelism()} cores)`,
  );
  if (output.logFile) log(`Function logs: ${output.logFile}`);
  log('');

  let services: LocalServices | undefined;
  try {
    const needsServices = ['writer', 'whole', 'dispatch', 'keys', 'api', 'resume', 'archive', 'orgs'].some(
      (part) => !skip.has(part),
    );
    if (needsServices && !process.env.SLUICE_CONTROL_TABLE) {
      const { startLocalServices } = await import('@sluice/devstack');
      // The JVM as `npm start` runs it (full JIT): the tests' quick-start flags (C1 only) made DynamoDB Local's
      // Query work of the whole export 1.6-1.9x the CPU at 1,000,000 rows.
      services = await startLocalServices({ dynamodbQuickStart: false });
      for (const [name, value] of Object.entries(services.env)) process.env[name] = value;
      log('Started DynamoDB Local, s3rver and the local KMS\n');
    }
    await benches(services);
  } finally {
    await services?.stop();
    log(
      `Load average at end: ${loadavg()
        .map((n) => n.toFixed(2))
        .join(', ')}`,
    );
    await output.close();
  }
}

async function benches(services: LocalServices | undefined): Promise<void> {
  if (!skip.has('segments')) {
    log('Event log segments: codecs, item sizes and the hot log priced per million 720-byte rows');
    const { runSegmentBench, printSegmentBench, PRICES } = await import('./segments.js');
    const figures = runSegmentBench(Number(process.env.BENCH_SEGMENT_ROWS ?? 20_000));
    printSegmentBench(figures, log);
    if (process.env.BENCH_SEGMENT_LOCAL !== '0') {
      log('  local ingest and whole read beside the per-row design (bench/segments-local.ts)');
      const { runSegmentLocalBench, printSegmentLocalBench } = await import('./segments-local.js');
      const rows = Number(process.env.BENCH_SEGMENT_LOCAL_ROWS ?? 20_000);
      printSegmentLocalBench(await runSegmentLocalBench({ rows, log }), log, {
        designs: figures.designs,
        lambdaPerMillionInvocations: PRICES.lambdaPerMillionInvocations,
      });
    }
    log('');
  }
  if (!skip.has('encode')) {
    log('Encode: rows to gzip JSON lines, Sluice beside DuckDB, pinned to one core and with the cores free');
    const { runEncodeBench, printEncodeBench } = await import('./encode.js');
    printEncodeBench(await runEncodeBench(rows, log), log);
    log('');
  }
  if (!skip.has('parquet')) {
    log(
      'Parquet: rows to Parquet files, Sluice beside DuckDB COPY and the JSON lines encoder, in this process',
    );
    const { runParquetBench, printParquetBench } = await import('./parquet.js');
    printParquetBench(
      await runParquetBench(Math.min(rows, Number(process.env.BENCH_PARQUET_ROWS ?? 200_000))),
      log,
    );
    log('');
  }
  if (!skip.has('writer')) {
    log('Writer end to end (read, encode, upload), each window in a child process');
    const { runWriterBench } = await import('./writer.js');
    const dynamoRows = Number(process.env.BENCH_DYNAMO_ROWS ?? rows);
    await runWriterBench({ rows, dynamoRows, smallRows: MAX_LINES_PER_FILE }, log);
    log('');
  }
  if (!skip.has('ingest')) {
    log(`Local ingest: ${fmt(ingestEvents)} events a path, in alternating rounds`);
    const { runIngestBench } = await import('./ingest.js');
    const figures = await runIngestBench({ events: ingestEvents, log });
    for (const f of figures) {
      log(
        `  ${f.name.padEnd(46)} ${fmt(f.rowsPerSecond).padStart(7)} rows/s  ${f.ratio.toFixed(2)}x  ` +
          `(${fmt(f.rows)} rows, ${(f.ms / 1000).toFixed(1)} s)`,
      );
    }
    const headline = figures.find((f) => f.name === 'CLI seed → npm start storage');
    log(
      `  ratio CLI seed (npm start storage) / raw in-memory: ${headline?.ratio.toFixed(2)}x (target ≥ 0.7x)\n`,
    );
  }
  if (!skip.has('whole') && existsSync(new URL('./whole-export.ts', import.meta.url))) {
    log('Whole local export through the Dispatch and ExportRun definitions');
    const { runWholeExportBench } = await import('./whole-export.js');
    const whole = await runWholeExportBench({
      rows,
      // The rows' density sets the segments' size: 1,000,000 rows over 3 days is ~230 a minute.
      ...(process.env.BENCH_WHOLE_DAYS ? { days: Number(process.env.BENCH_WHOLE_DAYS) } : {}),
      ...(process.env.BENCH_WHOLE_FREQUENCIES
        ? { frequencies: process.env.BENCH_WHOLE_FREQUENCIES.split(',') as Frequency[] }
        : {}),
      log,
      ...(services?.dynamodb.pid !== undefined ? { dynamodbPid: services.dynamodb.pid } : {}),
      ...(process.env.BENCH_PROFILE_DIR ? { profileDir: process.env.BENCH_PROFILE_DIR } : {}),
    });
    log(
      `  ${fmt(whole.rows)} events ingested in ${(whole.ingestMs / 1000).toFixed(1)} s through EventLogWriter ` +
        `(segments), and as per-row items in ${(whole.perRowSeedMs / 1000).toFixed(1)} s (not part of the figures)`,
    );
    const cores = availableParallelism();
    for (const e of whole.exports) {
      // CPU of this export only (each process read before and after it), and what it allows at best: every
      // core busy with this export's two processes.
      const cpuSeconds = e.nodeCpuSeconds + (e.dynamodbCpuSeconds ?? 0);
      const dynamodb =
        e.dynamodbCpuSeconds !== undefined
          ? ` + DynamoDB Local ${e.dynamodbCpuSeconds.toFixed(1)} s = ${((cpuSeconds / e.rows) * 1e6).toFixed(0)} µs a row, ` +
            `at most ${fmt(e.rows / (cpuSeconds / cores))} rows/s on ${cores} free cores`
          : '';
      log(
        `  ${e.frequency.padEnd(16)} ${e.design.padEnd(8)} ${fmt(e.rows)} rows in ${(e.exportMs / 1000).toFixed(1)} s: ` +
          `${fmt(e.rowsPerSecond).padStart(6)} rows/s, ${(e.rowsPerSecond / whole.encoderRowsPerSecond).toFixed(2)}x ` +
          `the encoder; ${e.runs} run(s), ${e.files} files, ${fmt(e.bytes)} B; CPU of this export: node ` +
          `${e.nodeCpuSeconds.toFixed(1)} s${dynamodb}`,
      );
    }
    for (const c of whole.comparisons) {
      log(
        `  ${c.frequency.padEnd(16)} ratio segments / per-row: ${c.ratio.toFixed(2)}x rows/s` +
          `${c.cpuRatio !== undefined ? `, ${c.cpuRatio.toFixed(2)}x the CPU a row` : ''}; files ` +
          `${c.identical ? 'byte-identical' : `DIFFERENT (first: ${c.firstDifference})`} (names and sha256)`,
      );
    }
    if (whole.comparisons.some((c) => !c.identical)) process.exitCode = 1;
    log(
      `  encoder alone (same rows, 50,000-line files, this process): ${fmt(whole.encoderRowsPerSecond)} rows/s`,
    );
    log('  target: whole export ≥ 30,000 rows/s\n');
  }
  if (!skip.has('resume')) {
    log('\nResume: one big window in one pass and in invocations out of budget, files compared');
    const { runResumeBench } = await import('./resume.js');
    const budget = process.env.BENCH_RESUME_BUDGET_MS;
    const figures = await runResumeBench(
      {
        rows,
        dynamoRows: Number(process.env.BENCH_DYNAMO_ROWS ?? rows),
        ...(budget !== undefined ? { budgetMs: Number(budget) } : {}),
      },
      log,
    );
    if (figures.some((f) => !f.identical)) process.exitCode = 1;
  }
  if (!skip.has('archive')) {
    const archiveRows = Number(process.env.BENCH_ARCHIVE_ROWS ?? Math.min(rows, 200_000));
    if (!Number.isInteger(archiveRows) || archiveRows < 1000)
      throw new Error('BENCH_ARCHIVE_ROWS must be an integer of at least 1000');
    log(
      '\nEvent archive: compaction into the archive bucket, read back as a late export would, and a full-history backfill',
    );
    const { runArchiveBench } = await import('./archive.js');
    await runArchiveBench(archiveRows, log);
  }
  if (!skip.has('orgs')) {
    const children = Number(process.env.BENCH_ORG_CHILDREN ?? 50);
    const rowsPerOrganization = Number(process.env.BENCH_ORG_ROWS ?? 200);
    if (
      !Number.isInteger(children) ||
      children < 1 ||
      !Number.isInteger(rowsPerOrganization) ||
      rowsPerOrganization < 1
    )
      throw new Error('BENCH_ORG_CHILDREN and BENCH_ORG_ROWS must be positive integers');
    log(
      `\nOrganisations: one hourly window of a parent with ${fmt(children)} children, ${fmt(rowsPerOrganization)} rows each`,
    );
    const { runOrganizationsBench, printOrganizationsBench } = await import('./organizations.js');
    printOrganizationsBench(await runOrganizationsBench({ children, rowsPerOrganization }), log);
  }
  if (!skip.has('dispatch')) {
    const destinations = Number(process.env.BENCH_DISPATCH_DESTINATIONS ?? 20_000);
    if (!Number.isInteger(destinations) || destinations < 1)
      throw new Error('BENCH_DISPATCH_DESTINATIONS must be a positive integer');
    log(`Dispatch: ${fmt(destinations)} due (queued) destinations, one execution, starts counted`);
    const { runDispatchBench } = await import('./dispatch.js');
    const d = await runDispatchBench(destinations);
    log(`  seeded with BatchWriteItem in ${(d.seedMs / 1000).toFixed(1)} s (two tables)`);
    log(
      `  started ${fmt(d.started)} (twice: ${d.startedTwice}, missed: ${d.missed}) in ${fmt(d.pages)} pages, ` +
        `largest state ${fmt(d.largestStateBytes)} B (limit 262,144)`,
    );
    log(
      `  Dispatch execution ${(d.ms / 1000).toFixed(1)} s: ${fmt(d.destinationsPerSecond)} destinations/s; ` +
        `engine alone ${(d.directMs / 1000).toFixed(1)} s: ${fmt(d.directDestinationsPerSecond)} destinations/s; ` +
        `ratio ${(d.destinationsPerSecond / d.directDestinationsPerSecond).toFixed(2)}x`,
    );
  }
  if (!skip.has('keys')) {
    log('\nAPI keys: the per-key rate limit against DynamoDB Local');
    const { runApiKeyBench, printApiKeyBench } = await import('./api-keys.js');
    printApiKeyBench(await runApiKeyBench(), log);
  }
  if (!skip.has('api')) {
    const seconds = Number(process.env.BENCH_API_SECONDS ?? 10);
    const connections = Number(process.env.BENCH_API_CONNECTIONS ?? 8);
    if (!(seconds > 0) || !Number.isInteger(connections) || connections < 1)
      throw new Error('BENCH_API_SECONDS must be positive and BENCH_API_CONNECTIONS a positive integer');
    log('\nAPI load: the local API (adapter, authorizer, handlers, local services) in this process');
    const { runApiLoadBench } = await import('./api-load.js');
    const figures = await runApiLoadBench({ seconds, connections, log });
    const errors = figures.reduce((total, f) => total + f.errors, 0);
    if (errors > 0) throw new Error(`API load: ${errors} requests failed`);
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
