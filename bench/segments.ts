/**
 * Event log segments (`npm run bench`, skip with `segments`; alone: `npm run bench:segments`): what the hot log
 * costs per million 720-byte rows today (one DynamoDB item a row) beside compressed segments, in one DynamoDB
 * item each or in one S3 object each with a small index item, for producers that batch (a few hundred rows a
 * bus entry) and producers that send one row an entry (with and without a buffer between the bus and ingest).
 * 1. Codecs Node has (gzip, raw deflate, brotli at three qualities): bytes a row and CPU µs a row to compress
 *    and to decompress, for segments of 1, 10, 300 and 1,000 rows of generated email events.
 * 2. The segments Sluice writes (`segmentPutRequests` of `@sluice/eventlog`, the codec chosen): item sizes.
 * 3. Units counted from those sizes (write units a KB an item, stored bytes with DynamoDB's 100 B an item,
 *    read units a 4 KB of a Query page, eventually consistent; S3 requests; buffer requests; Lambda time) and
 *    priced at the list prices printed. Measured sizes and CPU; prices and the ingest shape are assumptions,
 *    printed with the figures.
 * 4. The buffer candidates for one-row entries (bench/buffer.ts): SQS, Kinesis provisioned and on-demand,
 *    Firehose beside none, each priced with the store at the segment size it gives. Nothing here touches DynamoDB Local: `npm run bench`'s ingest part measures the
 *    local ingest rate of the writer (now segments) beside raw per-row BatchWriteItem.
 */
import { fileURLToPath } from 'node:url';
import {
  brotliCompressSync,
  brotliDecompressSync,
  constants,
  deflateRawSync,
  gunzipSync,
  gzipSync,
  inflateRawSync,
} from 'node:zlib';
import {
  decodeSegment,
  eventSk,
  generatedLine,
  generateEvents,
  SEGMENT_BROTLI_QUALITY,
  segmentPutRequests,
} from '@sluice/eventlog';
import { PRICES as ARCHIVE_PRICES } from './archive.js';
import { bufferCandidates, oneRowBusEvent, type PricedBuffer, printBufferBench } from './buffer.js';

/** us-east-1 list prices (December 2026) beside those of the archive bench. */
export const PRICES = {
  ...ARCHIVE_PRICES,
  /** DynamoDB on-demand: per million write request units (1 KB each); per GB-month stored; PITR per GB-month. */
  dynamoWritePerMillion: 0.625,
  dynamoStorageGbMonth: 0.25,
  dynamoPitrGbMonth: 0.2,
  /** SQS standard, per million requests (each 64 KB of a request is one). */
  sqsPerMillion: 0.4,
  /** Lambda requests, per million invocations. */
  lambdaPerMillionInvocations: 0.2,
  /** EventBridge PutEvents, per million entries of 64 KB: the producer's bill, the same in every design. */
  putEventsPerMillion: 1.0,
} as const;

const ROW_BYTES_TARGET = 720;
const RETENTION_DAYS = 35;
const MONTH_DAYS = 30.4;
/** DynamoDB's per-item storage overhead. */
const ITEM_OVERHEAD = 100;
/** The ingest function's memory (infra/stateless-stack.ts: 512 MB). */
const INGEST_GB = 0.5;
/** A bus entry of a batching producer: the producer example's few hundred rows (256 KB entries). */
const BATCHING_ROWS = 300;
/** Rows a buffered ingest invocation gets: SQS's batching window fills batches of up to 10,000 messages. */
const BUFFERED_ROWS = 1_000;
/** S3 segments: the index item (PK, SK, object key, lastMs, count, expiresAt). */
const INDEX_ITEM_BYTES = 200;
/** The archive compaction's memory (infra/stateless-stack.ts: 1,769 MB, one vCPU). */
const COMPACTION_GB = 1.769;
/** Archive objects: one per workspace, dataset and hour; the estimate spreads 200 million rows a month over 100 workspaces and 3 datasets. */
const ROWS_PER_ARCHIVE_OBJECT = 200e6 / (730 * 300);

interface Codec {
  name: string;
  compress: (text: Buffer) => Buffer;
  decompress: (bytes: Buffer) => Buffer;
}

const brotli = (quality: number): Codec => ({
  name: `brotli q${quality}`,
  compress: (text) =>
    brotliCompressSync(text, {
      params: {
        [constants.BROTLI_PARAM_QUALITY]: quality,
        [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
        [constants.BROTLI_PARAM_SIZE_HINT]: text.length,
      },
    }),
  decompress: (bytes) => brotliDecompressSync(bytes),
});

const CODECS: readonly Codec[] = [
  { name: 'gzip 6', compress: (t) => gzipSync(t), decompress: (b) => gunzipSync(b) },
  { name: 'deflate raw 6', compress: (t) => deflateRawSync(t), decompress: (b) => inflateRawSync(b) },
  brotli(4),
  brotli(SEGMENT_BROTLI_QUALITY),
  brotli(9),
];

/** One codec at one segment size. */
export interface CodecFigure {
  codec: string;
  rowsPerSegment: number;
  bytesPerRow: number;
  compressUsPerRow: number;
  decompressUsPerRow: number;
}

/** The cost of one design, per million rows, by part. */
export interface DesignCost {
  name: string;
  ingest: number;
  storage: number;
  pitr: number;
  exportReads: number;
  archive: number;
  buffer: number;
  lambda: number;
  total: number;
  notes: string;
}

/**
 * The archive compaction's CPU a row, measured: today it gzips the rows it reads; on segments it also decodes
 * them (brotli, then split into positions and lines) and merges the hour's segments by position.
 */
export interface ArchiveReencodeFigure {
  /** Decoding an hour's segments and merging their rows by position. */
  decodeMergeUsPerRow: number;
  /** Gzip (level 6) of the lines in batches of 1,000, as the archive's writer encodes. */
  gzipUsPerRow: number;
  /** Bytes a row of the archive object (gzip) and of the same rows' segments (brotli), which a copy would keep. */
  gzipBytesPerRow: number;
  segmentBytesPerRow: number;
  /** Segments of the hour whose recorded times overlap another's (calls recorded in the same minute). */
  overlappingSegments: number;
  segments: number;
}

export interface SegmentBenchFigures {
  rows: number;
  lineBytes: number;
  codecs: CodecFigure[];
  archive: ArchiveReencodeFigure;
  designs: DesignCost[];
  /** The buffer candidates for one-row entries, each with the store at its segment size. */
  busEventBytes: number;
  buffers: PricedBuffer[];
}

/** Generated email events of about 720 bytes, as their stored positions and lines. */
function sampleRows(count: number) {
  const from = Date.parse('2026-10-01T00:00:00.000Z');
  const rows: { key: string; line: string }[] = [];
  for (const event of generateEvents({ count, from, to: from + 50 * 60_000, mix: { email_events: 1 } })) {
    const recordedMs = Date.parse(event.recorded_at!);
    rows.push({ key: eventSk(recordedMs, event.id), line: generatedLine(event) });
  }
  return rows;
}

/** CPU µs of `fn`, run until at least `minMs` of CPU, per call. */
function cpuMicros(fn: () => void, minMs = 200): number {
  let calls = 0;
  const start = process.cpuUsage();
  let used = 0;
  while (used < minMs * 1000) {
    fn();
    calls++;
    const now = process.cpuUsage(start);
    used = now.user + now.system;
  }
  return used / calls;
}

function measureCodecs(rows: readonly { key: string; line: string }[]): CodecFigure[] {
  const figures: CodecFigure[] = [];
  for (const rowsPerSegment of [1, 10, BATCHING_ROWS, BUFFERED_ROWS]) {
    // Segments cut from different places of the sample, so one segment's luck does not decide.
    const texts: Buffer[] = [];
    for (
      let start = 0;
      start + rowsPerSegment <= rows.length && texts.length < 5;
      start += rowsPerSegment * 2 + 7
    ) {
      texts.push(
        Buffer.from(
          rows
            .slice(start, start + rowsPerSegment)
            .map((row) => `${row.key}\n${row.line}\n`)
            .join(''),
        ),
      );
    }
    for (const codec of CODECS) {
      const compressed = texts.map((text) => codec.compress(text));
      const bytes = compressed.reduce((total, c) => total + c.length, 0);
      const rowCount = rowsPerSegment * texts.length;
      figures.push({
        codec: codec.name,
        rowsPerSegment,
        bytesPerRow: bytes / rowCount,
        compressUsPerRow:
          cpuMicros(() => {
            for (const t of texts) codec.compress(t);
          }) / rowCount,
        decompressUsPerRow:
          cpuMicros(() => {
            for (const c of compressed) codec.decompress(c);
          }) / rowCount,
      });
    }
  }
  return figures;
}

/** DynamoDB's size of a low-level item: each attribute's name and value (numbers about 1 B a 2 digits, + 1). */
function itemBytes(item: Record<string, { S?: string; N?: string; B?: Uint8Array }>): number {
  let bytes = 0;
  for (const [name, value] of Object.entries(item)) {
    bytes += Buffer.byteLength(name);
    if (value.S !== undefined) bytes += Buffer.byteLength(value.S);
    else if (value.N !== undefined) bytes += Math.ceil(value.N.length / 2) + 1;
    else if (value.B !== undefined) bytes += value.B.length;
  }
  return bytes;
}

/** The segment items Sluice writes for rows cut into ingest calls of `perCall` rows: bytes and count. */
function segmentItems(rows: readonly { key: string; line: string }[], perCall: number) {
  const sizes: number[] = [];
  for (let start = 0; start < rows.length; start += perCall) {
    const call = rows.slice(start, start + perCall);
    // A bus ingest records a whole call (slice) at one millisecond: the positions share it.
    const ms = Number(call[0]!.key.slice(0, 13));
    const stamped = call.map((row) => ({ key: eventSk(ms, row.key.slice(14)), line: row.line }));
    for (const request of segmentPutRequests('ws_0123456789abcdef', 'email_events', stamped, () => 1e9, ms))
      sizes.push(itemBytes(request.PutRequest!.Item! as never));
  }
  return { items: sizes.length, bytes: sizes.reduce((a, b) => a + b, 0), sizes };
}

/**
 * What the archive compaction does with one hour of segments (`measureArchiveReencode`): ingest calls of
 * {@link BATCHING_ROWS} rows from 4 producers at once (each call's rows recorded at its own millisecond, so the
 * calls' segments interleave in recorded time), decoded, merged by position and gzipped in 1,000-line batches.
 */
function measureArchiveReencode(rows: readonly { key: string; line: string }[]): ArchiveReencodeFigure {
  const segments: { firstMs: number; lastMs: number; rows: Uint8Array }[] = [];
  const producers = 4;
  for (let start = 0; start < rows.length; start += BATCHING_ROWS * producers) {
    for (let p = 0; p < producers; p++) {
      const call = rows.filter(
        (_, i) => i >= start && i < start + BATCHING_ROWS * producers && i % producers === p,
      );
      if (call.length === 0) continue;
      const ms = Number(call[0]!.key.slice(0, 13)) + p;
      const stamped = call.map((row) => ({ key: eventSk(ms, row.key.slice(14)), line: row.line }));
      for (const request of segmentPutRequests(
        'ws_0123456789abcdef',
        'email_events',
        stamped,
        () => 1e9,
        ms,
      )) {
        const item = request.PutRequest!.Item!;
        segments.push({
          firstMs: Number(item.SK!.S!.slice(0, 13)),
          lastMs: Number(item.lastMs!.N),
          rows: item.rows!.B!,
        });
      }
    }
  }
  segments.sort((a, b) => a.firstMs - b.firstMs);
  const overlappingSegments = segments.filter((segment, i) =>
    segments.some(
      (other, j) => j !== i && other.firstMs <= segment.lastMs && other.lastMs >= segment.firstMs,
    ),
  ).length;
  let merged: string[] = [];
  const decodeMerge = cpuMicros(() => {
    const all = segments.flatMap((segment) => decodeSegment(segment.rows));
    all.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    merged = all.map((row) => row.line);
  });
  let gzipBytes = 0;
  const gzip = cpuMicros(() => {
    gzipBytes = 0;
    for (let i = 0; i < merged.length; i += 1000)
      gzipBytes += gzipSync(`${merged.slice(i, i + 1000).join('\n')}\n`).length;
  });
  return {
    decodeMergeUsPerRow: decodeMerge / rows.length,
    gzipUsPerRow: gzip / rows.length,
    gzipBytesPerRow: gzipBytes / rows.length,
    segmentBytesPerRow: segments.reduce((total, segment) => total + segment.rows.length, 0) / rows.length,
    overlappingSegments,
    segments: segments.length,
  };
}

const storageMonths = RETENTION_DAYS / MONTH_DAYS;

/** Prices one design from its units per million rows. */
function price(
  name: string,
  units: {
    writeUnits: number;
    dynamoBytes: number;
    readBytes: number;
    s3Puts?: number;
    s3Gets?: number;
    s3Bytes?: number;
    sqsRequests?: number;
    invocations: number;
    cpuSeconds: number;
    /** CPU seconds of the archive compaction (at {@link COMPACTION_GB}). */
    archiveCpuSeconds: number;
    archiveReadBytes: number;
    archiveBytes: number;
  },
  notes: string,
): DesignCost {
  const ingest =
    (units.writeUnits / 1e6) * PRICES.dynamoWritePerMillion +
    ((units.s3Puts ?? 0) / 1000) * PRICES.putPerThousand;
  const storage =
    (units.dynamoBytes / 1e9) * PRICES.dynamoStorageGbMonth * storageMonths +
    ((units.s3Bytes ?? 0) / 1e9) * PRICES.standardGbMonth * storageMonths;
  const pitr = (units.dynamoBytes / 1e9) * PRICES.dynamoPitrGbMonth * storageMonths;
  // A Query page's read units are its items' sizes summed, a unit per 4 KB, half for eventually consistent.
  const exportReads =
    (units.readBytes / 8192 / 1e6) * PRICES.dynamoReadPerMillion +
    ((units.s3Gets ?? 0) / 1000) * PRICES.getPerThousand;
  // The compaction reads the hot log once more, writes an object per workspace, dataset and hour, stores a month.
  const archive =
    (units.archiveReadBytes / 8192 / 1e6) * PRICES.dynamoReadPerMillion +
    ((units.s3Gets ?? 0) / 1000) * PRICES.getPerThousand +
    (1e6 / ROWS_PER_ARCHIVE_OBJECT / 1000) * PRICES.putPerThousand +
    (units.archiveBytes / 1e9) * PRICES.standardGbMonth +
    units.archiveCpuSeconds * COMPACTION_GB * PRICES.lambdaArmGbSecond;
  const buffer = ((units.sqsRequests ?? 0) / 1e6) * PRICES.sqsPerMillion;
  const lambda =
    (units.invocations / 1e6) * PRICES.lambdaPerMillionInvocations +
    units.cpuSeconds * INGEST_GB * PRICES.lambdaArmGbSecond;
  return {
    name,
    ingest,
    storage,
    pitr,
    exportReads,
    archive,
    buffer,
    lambda,
    total: ingest + storage + pitr + exportReads + archive + buffer + lambda,
    notes,
  };
}

export function runSegmentBench(rowCount = 20_000): SegmentBenchFigures {
  const rows = sampleRows(rowCount);
  const lineBytes = rows.reduce((total, row) => total + Buffer.byteLength(row.line), 0) / rows.length;
  const codecs = measureCodecs(rows);
  const archive = measureArchiveReencode(rows);
  const perMillion = 1e6 / rows.length;
  const chosen = (n: number) =>
    codecs.find((c) => c.codec === `brotli q${SEGMENT_BROTLI_QUALITY}` && c.rowsPerSegment === n)!;
  // Gzip in hour objects, as the archive stores them (the 1,000-row figure).
  const archiveBytes =
    codecs.find((c) => c.codec === 'gzip 6' && c.rowsPerSegment === BUFFERED_ROWS)!.bytesPerRow * 1e6;

  // Today: one item a row (PK, SK, line, expiresAt), one write unit each (items under 1 KB).
  const perRowItem = (row: { key: string; line: string }) =>
    itemBytes({
      PK: { S: 'ws_0123456789abcdef#email_events#2026-10-01T00#3' },
      SK: { S: row.key },
      line: { S: row.line },
      expiresAt: { N: '1790000000' },
    });
  let perRowBytes = 0;
  let perRowUnits = 0;
  for (const row of rows) {
    const bytes = perRowItem(row);
    perRowBytes += bytes;
    perRowUnits += Math.ceil(bytes / 1024);
  }
  const designs: DesignCost[] = [];
  const todayUnits = (invocations: number, sqsRequests = 0) => ({
    writeUnits: perRowUnits * perMillion,
    dynamoBytes: (perRowBytes + ITEM_OVERHEAD * rows.length) * perMillion,
    readBytes: perRowBytes * perMillion,
    invocations,
    sqsRequests,
    cpuSeconds: 0,
    // Today's compaction gzips the lines it reads.
    archiveCpuSeconds: archive.gzipUsPerRow,
    archiveReadBytes: perRowBytes * perMillion,
    archiveBytes,
  });
  designs.push(
    price(
      'today: an item a row, batching producer',
      todayUnits(1e6 / BATCHING_ROWS),
      `${BATCHING_ROWS} rows an entry`,
    ),
  );
  designs.push(price('today: an item a row, one row an entry', todayUnits(1e6), 'an invocation a row'));

  const dynamoSegmentCost = (
    perCall: number,
    extra: { sqsRequests?: number; invocations: number },
    name: string,
    notes: string,
  ): DesignCost => {
    const s = segmentItems(rows, perCall);
    const units = s.sizes.reduce((total, size) => total + Math.ceil(size / 1024), 0);
    // The CPU of the nearest measured segment size at or below this one.
    const measured = [1, 10, BATCHING_ROWS, BUFFERED_ROWS].filter((n) => n <= perCall).at(-1) ?? 1;
    const codec = chosen(measured);
    return price(
      name,
      {
        writeUnits: units * perMillion,
        dynamoBytes: (s.bytes + ITEM_OVERHEAD * s.items) * perMillion,
        readBytes: s.bytes * perMillion,
        invocations: extra.invocations,
        ...(extra.sqsRequests !== undefined ? { sqsRequests: extra.sqsRequests } : {}),
        // Compressing at ingest; decompressing at an export's read; the archive's decode, merge and gzip.
        cpuSeconds: codec.compressUsPerRow + codec.decompressUsPerRow,
        archiveCpuSeconds: archive.decodeMergeUsPerRow + archive.gzipUsPerRow,
        archiveReadBytes: s.bytes * perMillion,
        archiveBytes,
      },
      `${notes}; ${(s.bytes / s.items / 1024).toFixed(1)} KB an item, ${((s.bytes + ITEM_OVERHEAD * s.items) / rows.length).toFixed(0)} B stored a row`,
    );
  };
  const dynamoSegments = (...args: Parameters<typeof dynamoSegmentCost>) =>
    designs.push(dynamoSegmentCost(...args));
  // SQS: the bus sends each entry (a request), Lambda receives and deletes in batches of 10.
  const sqsPerRow = 1 + 2 / 10;
  dynamoSegments(
    BATCHING_ROWS,
    { invocations: 1e6 / BATCHING_ROWS },
    'DynamoDB segments, batching producer',
    `${BATCHING_ROWS} rows a segment`,
  );
  dynamoSegments(
    1,
    { invocations: 1e6 },
    'DynamoDB segments, one row an entry, no buffer',
    'a segment a row',
  );
  dynamoSegments(
    BUFFERED_ROWS,
    { invocations: 1e6 / BUFFERED_ROWS, sqsRequests: 1e6 * sqsPerRow },
    'DynamoDB segments, one row an entry, SQS buffer',
    `${BUFFERED_ROWS} rows a segment, ${sqsPerRow} SQS requests a row`,
  );

  // S3 segments: an object a segment (PUT; GET by each reader) and an index item (one write unit, read by Query).
  const s3Segments = (
    perCall: number,
    extra: { sqsRequests?: number; invocations: number },
    name: string,
    notes: string,
  ) => {
    const codec = chosen(perCall === 1 ? 1 : perCall >= BUFFERED_ROWS ? BUFFERED_ROWS : BATCHING_ROWS);
    const objects = 1e6 / perCall;
    designs.push(
      price(
        name,
        {
          writeUnits: objects,
          dynamoBytes: (INDEX_ITEM_BYTES + ITEM_OVERHEAD) * objects,
          readBytes: INDEX_ITEM_BYTES * objects,
          s3Puts: objects,
          s3Gets: objects,
          s3Bytes: codec.bytesPerRow * 1e6,
          invocations: extra.invocations,
          ...(extra.sqsRequests !== undefined ? { sqsRequests: extra.sqsRequests } : {}),
          cpuSeconds: codec.compressUsPerRow + codec.decompressUsPerRow,
          archiveCpuSeconds: archive.decodeMergeUsPerRow + archive.gzipUsPerRow,
          archiveReadBytes: INDEX_ITEM_BYTES * objects,
          archiveBytes,
        },
        `${notes}; no PITR for objects (versioning would keep erased rows)`,
      ),
    );
  };
  s3Segments(
    BATCHING_ROWS,
    { invocations: 1e6 / BATCHING_ROWS },
    'S3 segments + index item, batching producer',
    `${BATCHING_ROWS} rows an object`,
  );
  s3Segments(
    BUFFERED_ROWS,
    { invocations: 1e6 / BUFFERED_ROWS, sqsRequests: 1e6 * sqsPerRow },
    'S3 segments + index item, one row an entry, SQS buffer',
    `${BUFFERED_ROWS} rows an object`,
  );
  // The buffers for one-row entries: each one's own price beside the store at the segments it gives.
  const busEventBytes = Buffer.byteLength(oneRowBusEvent());
  const buffers = bufferCandidates(busEventBytes).map((candidate) => {
    const store = dynamoSegmentCost(
      Math.max(1, Math.round(candidate.rowsPerSegment)),
      { invocations: 1e6 / candidate.rowsPerInvocation },
      candidate.name,
      '',
    );
    return { ...candidate, store, total: store.total + candidate.buffer };
  });
  return { rows: rows.length, lineBytes, codecs, archive, designs, busEventBytes, buffers };
}

export function printSegmentBench(f: SegmentBenchFigures, log: (line: string) => void): void {
  const usd = (n: number, digits = 4) => `$${n.toFixed(digits)}`;
  log(
    `  ${f.rows.toLocaleString('en-US')} generated email events, lines ${f.lineBytes.toFixed(0)} B (target ${ROW_BYTES_TARGET})`,
  );
  log('  codec            rows/segment   B/row   compress µs/row   decompress µs/row');
  for (const c of f.codecs) {
    log(
      `  ${c.codec.padEnd(16)} ${String(c.rowsPerSegment).padStart(12)} ${c.bytesPerRow.toFixed(1).padStart(7)} ` +
        `${c.compressUsPerRow.toFixed(2).padStart(17)} ${c.decompressUsPerRow.toFixed(2).padStart(19)}`,
    );
  }
  const a = f.archive;
  const reencodeUsd = (a.decodeMergeUsPerRow + a.gzipUsPerRow) * COMPACTION_GB * PRICES.lambdaArmGbSecond;
  log(
    `  archive compaction, an hour of ${a.segments} segments (${a.overlappingSegments} overlapping another): decode + merge ` +
      `${a.decodeMergeUsPerRow.toFixed(2)} µs/row, gzip ${a.gzipUsPerRow.toFixed(2)} µs/row = ${usd(reencodeUsd, 5)} per million rows ` +
      `at ${COMPACTION_GB} GB; objects ${a.gzipBytesPerRow.toFixed(1)} B/row gzip against ${a.segmentBytesPerRow.toFixed(1)} B/row ` +
      `copied segments (${usd(((a.gzipBytesPerRow - a.segmentBytesPerRow) * 1e6 * PRICES.standardGbMonth) / 1e9, 5)} per million rows a month)`,
  );
  log(
    `  Assumptions (us-east-1 list prices): DynamoDB on-demand ${usd(PRICES.dynamoWritePerMillion, 3)}/million write units, ` +
      `${usd(PRICES.dynamoReadPerMillion, 3)}/million read units, ${usd(PRICES.dynamoStorageGbMonth, 2)}/GB-month, PITR ` +
      `${usd(PRICES.dynamoPitrGbMonth, 2)}/GB-month; S3 ${usd(PRICES.standardGbMonth, 3)}/GB-month, PUT ${usd(PRICES.putPerThousand, 3)} ` +
      `and GET ${usd(PRICES.getPerThousand, 4)} per 1,000; SQS ${usd(PRICES.sqsPerMillion, 2)}/million requests; Lambda ` +
      `${usd(PRICES.lambdaPerMillionInvocations, 2)}/million invocations and ${usd(PRICES.lambdaArmGbSecond, 10)}/GB-s at ${INGEST_GB} GB ` +
      `(CPU of compressing at ingest and decoding for one export, at ${INGEST_GB} GB; the compaction's decode, merge and gzip at ${COMPACTION_GB} GB, in the archive column; validation is the same in every design); ${RETENTION_DAYS} days stored; one export and the ` +
      `archive's compaction each read every row once; archive objects of ${Math.round(ROWS_PER_ARCHIVE_OBJECT)} rows (the issue's ` +
      `200 million rows a month, 100 workspaces, 3 datasets), one month in S3 Standard, gzip`,
  );
  log(
    '  per million rows:                                     ingest   storage     PITR   export  archive   buffer   Lambda    total',
  );
  for (const d of f.designs) {
    const cells = [d.ingest, d.storage, d.pitr, d.exportReads, d.archive, d.buffer, d.lambda, d.total]
      .map((n) => usd(n).padStart(8))
      .join(' ');
    log(`  ${d.name.padEnd(52)} ${cells}   (${d.notes})`);
  }
  printBufferBench(f.busEventBytes, f.buffers, log);
  log(
    `  the producer's PutEvents, apart (the same in every design): ${usd(PRICES.putEventsPerMillion / BATCHING_ROWS)} per million ` +
      `rows batching ${BATCHING_ROWS} an entry, ${usd(PRICES.putEventsPerMillion, 2)} one row an entry`,
  );
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const figures = runSegmentBench(Number(process.env.BENCH_SEGMENT_ROWS ?? 20_000));
  printSegmentBench(figures, console.log);
  if (process.env.BENCH_SEGMENT_LOCAL !== '0') {
    const { runSegmentLocalBench, printSegmentLocalBench } = await import('./segments-local.js');
    const rows = Number(process.env.BENCH_SEGMENT_LOCAL_ROWS ?? 20_000);
    printSegmentLocalBench(await runSegmentLocalBench({ rows, log: console.log }), console.log, {
      designs: figures.designs,
      lambdaPerMillionInvocations: PRICES.lambdaPerMillionInvocations,
    });
  }
}
