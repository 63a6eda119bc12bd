/**
 * The buffer between the bus and the ingest function (part of `npm run bench`'s segments part; alone:
 * `npm run bench:segments`), priced per million one-row bus entries at list prices: what each candidate costs
 * itself, the Lambda invocations it causes, and the event log store at the rows a segment it gives, beside
 * today's design (the rule invokes the function once an entry). The producer's own PutEvents is apart.
 *
 * Measured: the size of a one-row bus event (a generated 720-byte email event in EventBridge's envelope), of
 * its record in each candidate's Lambda payload, and the segment items at each size (`segmentItems`).
 * Assumed, printed with the figures: the issue's 200 million events a month, spread evenly over its 100
 * workspaces and 3 datasets (the worst case for segment sizes: a skewed spread gives the busy workspaces larger
 * segments), and each candidate's batching limits (Lambda's 6 MB payload, the batch size, the window).
 */
import { generatedLine, generateEvents } from '@sluice/eventlog';
import type { DesignCost } from './segments.js';

/** us-east-1 list prices (December 2026) of the candidates. */
export const BUFFER_PRICES = {
  /** SQS standard, per million requests (each 64 KB of a request is one). */
  sqsPerMillion: 0.4,
  /** Kinesis Data Streams provisioned: a shard-hour, and a million PUT payload units (25 KB each). */
  kinesisShardHour: 0.015,
  kinesisPutUnitsPerMillion: 0.014,
  /** Kinesis Data Streams on-demand: a stream-hour, a GB written, a GB read. */
  kinesisOnDemandStreamHour: 0.04,
  kinesisOnDemandInGb: 0.08,
  kinesisOnDemandOutGb: 0.04,
  /** Firehose direct PUT: a GB ingested, each record rounded up to 5 KB. */
  firehoseGb: 0.029,
  /** S3 PUT and GET per 1,000 (Firehose's objects, read once by ingest). */
  s3PutPerThousand: 0.005,
  s3GetPerThousand: 0.0004,
} as const;

/** The volume: 200 million events a month. */
export const EVENTS_PER_MONTH = 200e6;
const HOURS_PER_MONTH = 730;
const EVENTS_PER_SECOND = EVENTS_PER_MONTH / HOURS_PER_MONTH / 3600;
/** Workspaces × datasets the events spread over (the issue: 100 workspaces, 3 datasets). */
export const PARTITIONS = 100 * 3;
/** Lambda's payload limit for one invocation. */
const LAMBDA_PAYLOAD_BYTES = 6 * 1024 * 1024;
/** The batching window Sluice configures (the event source mapping's MaximumBatchingWindowInSeconds). */
export const BATCHING_WINDOW_SECONDS = 60;

/** One candidate, per million one-row entries. */
export interface BufferCandidate {
  name: string;
  /** What the buffer itself costs. */
  buffer: number;
  /** Rows one ingest invocation gets. */
  rowsPerInvocation: number;
  /** Rows a segment holds, spread evenly over {@link PARTITIONS}. */
  rowsPerSegment: number;
  notes: string;
}

/** A one-row bus event as EventBridge delivers it, and its size. */
export function oneRowBusEvent(): string {
  const from = Date.parse('2026-10-01T00:00:00.000Z');
  const [event] = generateEvents({ count: 1, from, to: from + 60_000, mix: { email_events: 1 } });
  const row = JSON.parse(generatedLine(event!)) as Record<string, unknown>;
  return JSON.stringify({
    version: '0',
    id: '6a7e8feb-b491-4cf7-a9f1-bf3703467718',
    'detail-type': 'sluice.events',
    source: 'sluice.workspace.ws_0123456789abcdef',
    account: '123456789012',
    time: '2026-10-01T00:00:00Z',
    region: 'us-east-1',
    resources: [],
    detail: { workspaceId: 'ws_0123456789abcdef', events: [{ dataset: 'email_events', ...row }] },
  });
}

/** The buffer candidates for `busEventBytes`-byte one-row entries. */
export function bufferCandidates(busEventBytes: number): BufferCandidate[] {
  const perSegment = (rows: number) => Math.max(1, rows / PARTITIONS);
  const windowRows = EVENTS_PER_SECOND * BATCHING_WINDOW_SECONDS;
  // Kinesis: the record's data is base64 in the Lambda event, with ~330 B of metadata; batch size ≤ 10,000.
  const kinesisRecord = Math.ceil(busEventBytes / 3) * 4 + 330;
  const kinesisRows = Math.min(10_000, Math.floor(LAMBDA_PAYLOAD_BYTES / kinesisRecord), windowRows);
  // SQS: the body is the bus event as a JSON string (quotes escaped), with ~550 B of attributes.
  const sqsRecord = JSON.stringify(oneRowBusEvent()).length + 550;
  const sqsRows = Math.min(10_000, Math.floor(LAMBDA_PAYLOAD_BYTES / sqsRecord), windowRows);
  const shardCost = (shards: number) =>
    ((shards * HOURS_PER_MONTH * BUFFER_PRICES.kinesisShardHour) / EVENTS_PER_MONTH) * 1e6;
  const putUnits = Math.ceil(busEventBytes / 25_600);
  const gb = (busEventBytes * 1e6) / 1e9;
  // A shard takes 1,000 records or 1 MB a second: peaks of 10× the mean fit in one.
  const shards = Math.max(1, Math.ceil((EVENTS_PER_SECOND * 10) / 1000));
  // Firehose buffers up to 900 s or 128 MB into one S3 object a buffer; ingest reads each object once.
  const firehoseRows = Math.min(EVENTS_PER_SECOND * 900, (128 * 1024 * 1024) / busEventBytes);
  return [
    {
      name: 'none: the rule invokes ingest once an entry (today)',
      buffer: 0,
      rowsPerInvocation: 1,
      rowsPerSegment: 1,
      notes: 'EventBridge delivery to Lambda is free',
    },
    {
      name: 'SQS standard + event source mapping',
      buffer: (1 + 2 / 10) * BUFFER_PRICES.sqsPerMillion,
      rowsPerInvocation: sqsRows,
      rowsPerSegment: perSegment(sqsRows),
      notes: 'a SendMessage an entry; receives and deletes 10 at a time',
    },
    {
      name: `Kinesis provisioned, ${shards} shard + event source mapping`,
      buffer: putUnits * BUFFER_PRICES.kinesisPutUnitsPerMillion + shardCost(shards),
      rowsPerInvocation: kinesisRows,
      rowsPerSegment: perSegment(kinesisRows),
      notes: `${putUnits} PUT unit an entry; ${shardCost(shards).toFixed(4)} of shard-hours at 200 M/month; reads free`,
    },
    {
      name: 'Kinesis provisioned, 2 shards + event source mapping',
      buffer: putUnits * BUFFER_PRICES.kinesisPutUnitsPerMillion + shardCost(2),
      rowsPerInvocation: kinesisRows,
      rowsPerSegment: perSegment(kinesisRows),
      notes: 'headroom for 20× the mean',
    },
    {
      name: 'Kinesis on-demand + event source mapping',
      buffer:
        gb * (BUFFER_PRICES.kinesisOnDemandInGb + BUFFER_PRICES.kinesisOnDemandOutGb) +
        ((HOURS_PER_MONTH * BUFFER_PRICES.kinesisOnDemandStreamHour) / EVENTS_PER_MONTH) * 1e6,
      rowsPerInvocation: kinesisRows,
      rowsPerSegment: perSegment(kinesisRows),
      notes: 'per GB in and out, and the stream-hours',
    },
    {
      name: 'Firehose to S3, ingest on each object',
      buffer:
        ((1e6 * Math.ceil(busEventBytes / 5120) * 5120) / 1e9) * BUFFER_PRICES.firehoseGb +
        (1e6 / firehoseRows / 1000) * (BUFFER_PRICES.s3PutPerThousand + BUFFER_PRICES.s3GetPerThousand),
      rowsPerInvocation: firehoseRows,
      rowsPerSegment: perSegment(firehoseRows),
      notes: 'each record billed as 5 KB; the dead letter would hold S3 objects, not bus events',
    },
  ];
}

/** One candidate priced whole: its buffer beside the store at its segment size (from `priceStore`). */
export interface PricedBuffer extends BufferCandidate {
  store: DesignCost;
  total: number;
}

export function printBufferBench(
  busEventBytes: number,
  priced: readonly PricedBuffer[],
  log: (line: string) => void,
): void {
  const usd = (n: number) => `$${n.toFixed(4)}`.padStart(8);
  log(
    `  Buffers, per million one-row entries (a ${busEventBytes}-byte bus event each): ${EVENTS_PER_MONTH / 1e6} M ` +
      `events a month (${EVENTS_PER_SECOND.toFixed(0)}/s) spread evenly over ${PARTITIONS} workspace datasets, ` +
      `a ${BATCHING_WINDOW_SECONDS} s batching window, Lambda's 6 MB payload; list prices: SQS ` +
      `$${BUFFER_PRICES.sqsPerMillion}/M requests; Kinesis $${BUFFER_PRICES.kinesisShardHour}/shard-hour, ` +
      `$${BUFFER_PRICES.kinesisPutUnitsPerMillion}/M PUT units, on-demand $${BUFFER_PRICES.kinesisOnDemandStreamHour}/stream-hour ` +
      `+ $${BUFFER_PRICES.kinesisOnDemandInGb}/GB in + $${BUFFER_PRICES.kinesisOnDemandOutGb}/GB out; Firehose ` +
      `$${BUFFER_PRICES.firehoseGb}/GB (5 KB a record)`,
  );
  log(
    '  buffer                                                 rows/call  rows/seg   buffer   Lambda    store    total',
  );
  for (const p of priced) {
    const storeOnly = p.store.total - p.store.lambda - p.store.buffer;
    log(
      `  ${p.name.padEnd(54)} ${Math.round(p.rowsPerInvocation).toString().padStart(9)} ${p.rowsPerSegment.toFixed(1).padStart(9)} ` +
        `${usd(p.buffer)} ${usd(p.store.lambda)} ${usd(storeOnly)} ${usd(p.total)}   (${p.notes})`,
    );
  }
}
