/**
 * The buffer between the bus and the ingest function, on this machine: a Kinesis data stream of one shard
 * ({@link LocalStream}) and Lambda's event source mapping over it ({@link startStreamMapping}), with the behaviour
 * Sluice relies on in AWS:
 * - batching: a batch is invoked when `batchSize` records wait or `batchingWindowMs` after the first one arrived;
 * - the Kinesis event shape (`Records[].kinesis.data` base64, `sequenceNumber`, `approximateArrivalTimestamp`);
 * - partial batch failures (`ReportBatchItemFailures`): the records before the lowest reported sequence number
 *   are done; the batch is retried from it;
 * - a function error retries the batch (halved first with `bisectOnError`), each retry counted;
 * - after `maxRetryAttempts` retries the rest of the batch is discarded and an on-failure record (Lambda's
 *   documented format for a Kinesis source: the shard and sequence numbers, not the data) goes to `onFailure`.
 * Records are kept in order, one shard: the next batch starts where the last one was checkpointed.
 */
import { randomUUID } from 'node:crypto';

/** A record of the stream as Lambda delivers it. */
export interface LocalKinesisRecord {
  kinesis: {
    kinesisSchemaVersion: '1.0';
    partitionKey: string;
    sequenceNumber: string;
    data: string;
    approximateArrivalTimestamp: number;
  };
  eventSource: 'aws:kinesis';
  eventVersion: '1.0';
  eventID: string;
  eventName: 'aws:kinesis:record';
  invokeIdentityArn: string;
  awsRegion: string;
  eventSourceARN: string;
}

/** The event Lambda invokes the function with. */
export interface LocalKinesisEvent {
  Records: LocalKinesisRecord[];
}

/** What the function may answer (`ReportBatchItemFailures`). */
export interface LocalBatchResponse {
  batchItemFailures?: { itemIdentifier: string }[];
}

/** The on-failure record of a discarded Kinesis batch. */
export interface KinesisFailureRecord {
  requestContext: {
    requestId: string;
    functionArn: string;
    condition: string;
    approximateInvokeCount: number;
  };
  responseContext: { statusCode: number; executedVersion: '$LATEST'; functionError?: 'Unhandled' };
  version: '1.0';
  timestamp: string;
  KinesisBatchInfo: {
    shardId: string;
    startSequenceNumber: string;
    endSequenceNumber: string;
    approximateArrivalOfFirstRecord: string;
    approximateArrivalOfLastRecord: string;
    batchSize: number;
    streamArn: string;
  };
}

const SHARD_ID = 'shardId-000000000000';

/** A one-shard stream in memory. */
export class LocalStream {
  readonly arn: string;
  private readonly records: LocalKinesisRecord[] = [];
  private readonly waiters = new Set<() => void>();

  constructor(name = 'sluice-local-ingest') {
    this.arn = `arn:aws:kinesis:us-east-1:000000000000:stream/${name}`;
  }

  /** PutRecord: appends `data` (the bytes of a record), returns its sequence number. */
  put(data: string | Uint8Array, partitionKey: string): string {
    const sequenceNumber = String(this.records.length + 1).padStart(21, '0');
    this.records.push({
      kinesis: {
        kinesisSchemaVersion: '1.0',
        partitionKey,
        sequenceNumber,
        data: Buffer.from(data).toString('base64'),
        approximateArrivalTimestamp: Date.now() / 1000,
      },
      eventSource: 'aws:kinesis',
      eventVersion: '1.0',
      eventID: `${SHARD_ID}:${sequenceNumber}`,
      eventName: 'aws:kinesis:record',
      invokeIdentityArn: 'arn:aws:iam::000000000000:role/sluice-local-ingest',
      awsRegion: 'us-east-1',
      eventSourceARN: this.arn,
    });
    for (const wake of this.waiters) wake();
    return sequenceNumber;
  }

  /** Records from position `from` (0-based), at most `max`. */
  read(from: number, max: number): LocalKinesisRecord[] {
    return this.records.slice(from, from + max);
  }

  get length(): number {
    return this.records.length;
  }

  /** Resolves at the next put (or at once when `from` is behind the end). */
  waitFor(from: number): Promise<void> {
    if (this.records.length > from) return Promise.resolve();
    return new Promise((resolve) => {
      const wake = () => {
        this.waiters.delete(wake);
        resolve();
      };
      this.waiters.add(wake);
    });
  }
}

/** Options of {@link startStreamMapping} (the event source mapping's settings). */
export interface StreamMappingOptions {
  /** Records at most in one invocation. @default 100 */
  batchSize?: number;
  /** How long the mapping gathers records before it invokes with fewer than `batchSize`. @default 0 */
  batchingWindowMs?: number;
  /** Retries of a failing batch before it is discarded to `onFailure`. @default 2 */
  maxRetryAttempts?: number;
  /** Halve a batch whose invocation threw before retrying it. @default true */
  bisectOnError?: boolean;
  /** The on-failure destination. */
  onFailure: (record: KinesisFailureRecord) => Promise<void>;
  functionArn?: string;
}

/** A running mapping. */
export interface StreamMapping {
  /** Resolves when every record put so far has been processed or discarded. */
  drain(): Promise<void>;
  /** Invocations so far, each with its records' count. */
  readonly invocations: readonly number[];
  stop(): Promise<void>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Starts polling `stream` for `handler`, as Lambda's event source mapping does. */
export function startStreamMapping(
  stream: LocalStream,
  handler: (event: LocalKinesisEvent) => Promise<LocalBatchResponse | undefined>,
  options: StreamMappingOptions,
): StreamMapping {
  const batchSize = options.batchSize ?? 100;
  const window = options.batchingWindowMs ?? 0;
  const maxRetries = options.maxRetryAttempts ?? 2;
  const bisect = options.bisectOnError ?? true;
  const invocations: number[] = [];
  let checkpoint = 0;
  let stopped = false;
  const idle = new Set<() => void>();

  const discard = async (records: LocalKinesisRecord[], invokeCount: number) => {
    const first = records[0]!.kinesis;
    const last = records.at(-1)!.kinesis;
    await options.onFailure({
      requestContext: {
        requestId: randomUUID(),
        functionArn:
          options.functionArn ?? 'arn:aws:lambda:us-east-1:000000000000:function:sluice-local-ingest',
        condition: 'RetryAttemptsExhausted',
        approximateInvokeCount: invokeCount,
      },
      responseContext: { statusCode: 200, executedVersion: '$LATEST', functionError: 'Unhandled' },
      version: '1.0',
      timestamp: new Date().toISOString(),
      KinesisBatchInfo: {
        shardId: SHARD_ID,
        startSequenceNumber: first.sequenceNumber,
        endSequenceNumber: last.sequenceNumber,
        approximateArrivalOfFirstRecord: new Date(first.approximateArrivalTimestamp * 1000).toISOString(),
        approximateArrivalOfLastRecord: new Date(last.approximateArrivalTimestamp * 1000).toISOString(),
        batchSize: records.length,
        streamArn: stream.arn,
      },
    });
  };

  /** Processes `records` (from stream position `start`) to the end, with retries; returns nothing. */
  const processBatch = async (records: LocalKinesisRecord[]): Promise<void> => {
    let pending = records;
    let retries = 0;
    while (pending.length > 0) {
      let size = pending.length;
      invocations.push(size);
      let failedFrom: number | undefined;
      try {
        const response = await handler({ Records: pending.slice(0, size) });
        const failed = (response?.batchItemFailures ?? []).map((f) =>
          pending.findIndex((r) => r.kinesis.sequenceNumber === f.itemIdentifier),
        );
        if (failed.some((i) => i < 0))
          failedFrom = 0; // an unknown identifier fails the whole batch
        else if (failed.length > 0) failedFrom = Math.min(...failed);
      } catch {
        failedFrom = 0;
        if (bisect && size > 1) size = Math.ceil(size / 2);
      }
      if (failedFrom === undefined) {
        pending = pending.slice(size);
        retries = 0;
        continue;
      }
      pending = pending.slice(failedFrom);
      if (retries >= maxRetries) {
        const rest = failedFrom === 0 && size < pending.length ? pending.slice(0, size) : pending;
        await discard(rest, retries + 1);
        pending = pending.slice(rest.length);
        retries = 0;
        continue;
      }
      retries++;
      // A bisected batch is retried as its first half, then the second.
      if (size < pending.length && failedFrom === 0) {
        await processBatch(pending.slice(0, size));
        pending = pending.slice(size);
        retries = 0;
      }
    }
  };

  const loop = (async () => {
    while (!stopped) {
      if (stream.length <= checkpoint) {
        for (const wake of idle) wake();
        await Promise.race([stream.waitFor(checkpoint), sleep(50)]);
        continue;
      }
      // The batching window: from when a record is waiting, until the window passes or the batch is full.
      const windowEnds = Date.now() + window;
      while (!stopped && stream.length - checkpoint < batchSize && Date.now() < windowEnds)
        await sleep(Math.min(20, Math.max(1, windowEnds - Date.now())));
      const records = stream.read(checkpoint, batchSize);
      await processBatch(records);
      checkpoint += records.length;
    }
  })();

  return {
    invocations,
    drain() {
      if (stream.length <= checkpoint) return Promise.resolve();
      return new Promise((resolve) => {
        const check = () => {
          if (stream.length <= checkpoint) {
            idle.delete(check);
            resolve();
          }
        };
        idle.add(check);
      });
    },
    async stop() {
      stopped = true;
      await loop;
    },
  };
}
