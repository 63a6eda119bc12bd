import {
  BatchWriteItemCommand,
  type BatchWriteItemCommandOutput,
  type DynamoDBClient,
  type WriteRequest,
} from '@aws-sdk/client-dynamodb';
import {
  forEachConcurrently,
  isTransientServiceError,
  RETRY,
  retrying,
  SluiceError,
  sleep as wait,
  TRANSIENT_DYNAMODB_ERROR_NAMES,
} from '@sluice/core';

/** BatchWriteItem's limit of requests per call. */
export const BATCH_WRITE_LIMIT = 25;

/** Options of {@link batchWrite}. */
export interface BatchWriteOptions {
  /**
   * Calls per chunk, the first included, before its remaining items count as not written.
   * @default 8
   */
  maxAttempts?: number;
  /**
   * The first backoff; each retry doubles it, up to `maxDelayMs`, and sleeps a random part of it (full jitter).
   * @default 50
   */
  baseDelayMs?: number;
  /** @default 2000 */
  maxDelayMs?: number;
  /**
   * Chunks in flight at once.
   * @default 4
   */
  concurrency?: number;
  /** For tests: how to wait. @default setTimeout */
  sleep?: (ms: number) => Promise<void>;
  /** For tests: the jitter source in [0, 1). @default Math.random */
  random?: () => number;
}

/** Some items of a batched write were still unprocessed after every attempt. */
export class UnwrittenItemsError extends SluiceError {
  /** Items not written. */
  readonly unwritten: number;
  /** Items the write was asked for. */
  readonly total: number;

  constructor(tableName: string, unwritten: number, total: number, attempts: number) {
    super(
      `${unwritten} of ${total} items were not written to ${tableName} after ${attempts} attempts (throttled); ` +
        'retry the write',
    );
    this.unwritten = unwritten;
    this.total = total;
  }
}

function isTransient(error: unknown): boolean {
  return isTransientServiceError(error, TRANSIENT_DYNAMODB_ERROR_NAMES);
}

/**
 * Writes requests with BatchWriteItem in chunks of 25, a few chunks at once. `UnprocessedItems` (and throttling
 * errors) are retried with exponential backoff and full jitter, at most `maxAttempts` calls per chunk; then
 * {@link UnwrittenItemsError} says how many items were not written. Other errors are rethrown at once.
 * The requests must not contain two writes of the same key (DynamoDB refuses such a batch).
 * @returns the number of items written
 */
export async function batchWrite(
  client: DynamoDBClient,
  tableName: string,
  requests: readonly WriteRequest[],
  options: BatchWriteOptions = {},
): Promise<number> {
  const maxAttempts = options.maxAttempts ?? 8;
  const baseDelayMs = options.baseDelayMs ?? 50;
  const maxDelayMs = options.maxDelayMs ?? 2_000;
  const sleep = options.sleep ?? wait;
  const random = options.random ?? Math.random;
  const chunks: WriteRequest[][] = [];
  for (let i = 0; i < requests.length; i += BATCH_WRITE_LIMIT) {
    chunks.push(requests.slice(i, i + BATCH_WRITE_LIMIT));
  }

  let unwritten = 0;

  const retry = { maxAttempts, baseMs: baseDelayMs, maxMs: maxDelayMs, sleep, random };
  const writeChunk = async (chunk: WriteRequest[]) => {
    let pending = chunk;
    const outcome = await retrying(retry, async () => {
      let output: BatchWriteItemCommandOutput | undefined;
      try {
        output = await client.send(new BatchWriteItemCommand({ RequestItems: { [tableName]: pending } }));
      } catch (error) {
        if (!isTransient(error)) throw error;
      }
      if (output) pending = output.UnprocessedItems?.[tableName] ?? [];
      return pending.length > 0 ? RETRY : undefined;
    });
    if (outcome === RETRY) unwritten += pending.length;
  };

  await forEachConcurrently(chunks, options.concurrency ?? 4, writeChunk);
  if (unwritten > 0) throw new UnwrittenItemsError(tableName, unwritten, requests.length, maxAttempts);
  return requests.length;
}
