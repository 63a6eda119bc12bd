/**
 * Event archive bench (`npm run bench`, skip with `archive`): `BENCH_ARCHIVE_ROWS` (default 200,000) email
 * events spread over 10 past hours are written to DynamoDB Local, then
 * 1. read once from the hot log (the reference: the compaction reads the same way),
 * 2. compacted into the local archive bucket (s3rver): rows/s, objects (PUT requests), bytes stored,
 * 3. read back from the archive as an export behind the hot log would (ArchivedEventSource): rows/s.
 * The cost per million rows follows from the bytes and PUTs measured, at S3 Standard prices (us-east-1).
 */
import { randomUUID } from 'node:crypto';
import { ArchiveBucket, ArchiveCompactor, ArchivedEventSource, createArchiveClient } from '@sluice/archive';
import { ArchiveCursorStore } from '@sluice/control';
import { EventLogReader, EventLogWriter, generateEvents } from '@sluice/eventlog';

const HOUR = 3_600_000;
const HOURS = 10;
/** S3 Standard, us-east-1 (December 2026 price list): storage per GB-month, PUT per 1,000 requests. */
export const S3_PRICES = {
  standardGbMonth: 0.023,
  infrequentAccessGbMonth: 0.0125,
  glacierInstantGbMonth: 0.004,
  putPerThousand: 0.005,
} as const;

/** The figures of one archive bench. */
export interface ArchiveFigures {
  rows: number;
  objects: number;
  bytes: number;
  hotReadRowsPerSecond: number;
  compactionRowsPerSecond: number;
  archiveReadRowsPerSecond: number;
}

function environment(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: the bench starts the local services first`);
  return value;
}

/** Runs the archive bench against the local services (their environment in `process.env`). */
export async function runArchiveBench(rows: number, log: (line: string) => void): Promise<ArchiveFigures> {
  const tables = {
    eventsTable: environment('SLUICE_EVENTS_TABLE'),
    subscribersTable: environment('SLUICE_SUBSCRIBERS_TABLE'),
  };
  const controlTable = { tableName: environment('SLUICE_CONTROL_TABLE') };
  const archive = new ArchiveBucket({
    bucket: environment('SLUICE_ARCHIVE_BUCKET'),
    client: createArchiveClient({ localEndpoint: environment('SLUICE_LOCAL_S3_ENDPOINT') }),
  });
  const workspaceId = `ws_bench_${randomUUID().slice(0, 8)}`;
  const firstHour = Math.floor(Date.now() / HOUR) * HOUR - (HOURS + 1) * HOUR;
  const writer = new EventLogWriter({ ...tables, explicitRecordedAt: 'unchecked' });
  const events = generateEvents({
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

  const hot = new EventLogReader(tables);
  const from = firstHour - 1;
  const to = firstHour + HOURS * HOUR - 1;
  let t0 = performance.now();
  let read = 0;
  for await (const page of hot.readWindow(workspaceId, 'email_events', from, to)) read += page.lines.length;
  const hotSeconds = (performance.now() - t0) / 1000;

  const cursors = new ArchiveCursorStore(controlTable);
  // The hot log "keeps" exactly the hours written, so the compaction starts at the first.
  const hotRetentionMs = Date.now() - firstHour;
  t0 = performance.now();
  const compacted = await new ArchiveCompactor({ hot, archive, cursors, hotRetentionMs }).compactDataset(
    workspaceId,
    'email_events',
  );
  const compactSeconds = (performance.now() - t0) / 1000;

  // Read back as a late export would: the hot log's retention over, every hour from the archive.
  const late = new ArchivedEventSource({
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
  if (read !== rows || compacted.rows !== rows || fromArchive !== rows) {
    throw new Error(
      `archive bench: wrote ${rows}, hot read ${read}, archived ${compacted.rows}, read back ${fromArchive}`,
    );
  }

  const figures: ArchiveFigures = {
    rows,
    objects: compacted.objects,
    bytes: compacted.bytes,
    hotReadRowsPerSecond: rows / hotSeconds,
    compactionRowsPerSecond: rows / compactSeconds,
    archiveReadRowsPerSecond: rows / archiveSeconds,
  };
  printArchiveBench(figures, log);
  return figures;
}

/** Prints the figures and the cost per million rows they imply. */
export function printArchiveBench(f: ArchiveFigures, log: (line: string) => void): void {
  const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
  const perMillion = 1_000_000 / f.rows;
  const gbPerMillion = (f.bytes * perMillion) / 1e9;
  const putsPerMillion = f.objects * perMillion;
  const standardMonth = gbPerMillion * S3_PRICES.standardGbMonth;
  // Two years with the lifecycle: 1 month Standard, 2 months Standard-IA, 21 months Glacier IR.
  const twoYears =
    gbPerMillion *
    (S3_PRICES.standardGbMonth +
      2 * S3_PRICES.infrequentAccessGbMonth +
      21 * S3_PRICES.glacierInstantGbMonth);
  const puts = (putsPerMillion / 1000) * S3_PRICES.putPerThousand;
  log(
    `  ${fmt(f.rows)} rows in ${HOURS} hours: ${fmt(f.objects)} objects (PUT requests), ${fmt(f.bytes)} bytes stored ` +
      `(${(f.bytes / f.rows).toFixed(1)} B/row)`,
  );
  log(
    `  compaction ${fmt(f.compactionRowsPerSecond)} rows/s; hot log read alone ${fmt(f.hotReadRowsPerSecond)} rows/s ` +
      `(ratio ${(f.compactionRowsPerSecond / f.hotReadRowsPerSecond).toFixed(2)}x); archive read back ` +
      `${fmt(f.archiveReadRowsPerSecond)} rows/s (${(f.archiveReadRowsPerSecond / f.hotReadRowsPerSecond).toFixed(2)}x the hot log)`,
  );
  log(
    `  per million rows: ${gbPerMillion.toFixed(3)} GB = $${standardMonth.toFixed(4)} a month in S3 Standard, ` +
      `$${twoYears.toFixed(4)} for two years with the lifecycle; ${fmt(putsPerMillion)} PUTs = $${puts.toFixed(5)} ` +
      `(PUTs are one per workspace, dataset and hour with rows: ${fmt(8_760)} a year = $${((8_760 / 1000) * S3_PRICES.putPerThousand).toFixed(3)} per active dataset)`,
  );
}
