import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { BatchWriteCommand, DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import {
  isTransientServiceError,
  DatabaseUnavailableError,
  RETRY,
  retrying,
  TRANSIENT_DYNAMODB_ERROR_NAMES,
} from '@sluice/core';

/**
 * Builds a document client with the options every Sluice store relies on: `removeUndefinedValues`, and
 * short connection and request timeouts so that an unreachable database fails fast (then a retryable `DatabaseUnavailableError`).
 * The endpoint comes from the SDK's own `AWS_ENDPOINT_URL_DYNAMODB` when set.
 */
export function createDocumentClient(
  config: ConstructorParameters<typeof DynamoDBClient>[0] = {},
): DynamoDBDocumentClient {
  const base = new DynamoDBClient({
    requestHandler: new NodeHttpHandler({ connectionTimeout: 2_000, requestTimeout: 5_000 }),
    ...config,
  });
  return DynamoDBDocumentClient.from(base, { marshallOptions: { removeUndefinedValues: true } });
}

/** The one module-level document client; stores use it unless a client is injected. */
export const documentClient: DynamoDBDocumentClient = createDocumentClient();

/** Where a store reads and writes: the client and the control table name. */
export interface ControlTableOptions {
  /** @default the module-level {@link documentClient} */
  client?: DynamoDBDocumentClient;
  /** The control table's name (the entry point reads it from its configuration). */
  tableName: string;
}

/** The resolved pair every control store holds. */
export interface ControlTable {
  readonly client: DynamoDBDocumentClient;
  readonly tableName: string;
}

/**
 * Resolves injected options against the defaults. Throws on an empty table name, so a misconfigured store
 * fails when it is built.
 */
export function resolveControlTable(options: ControlTableOptions): ControlTable {
  const tableName = options?.tableName;
  if (typeof tableName !== 'string' || tableName === '') {
    throw new Error('A control store needs the control table name (tableName).');
  }
  return { client: options.client ?? documentClient, tableName };
}

/** Transaction cancellation reasons that are worth retrying. */
const TRANSIENT_CANCELLATION_CODES: readonly string[] = ['ThrottlingError', 'TransactionConflict'];

/**
 * True when a DynamoDB call failed for a reason that retrying later can fix: throttling, a 5xx from the
 * service, a timeout or a connection failure (also inside an `AggregateError` or a `cause`).
 */
export function isTransientDynamoError(error: unknown): boolean {
  return isTransientServiceError(error, TRANSIENT_DYNAMODB_ERROR_NAMES, isTransientCancellation);
}

/** A cancelled transaction whose reasons include throttling or a conflict. */
function isTransientCancellation(error: object): boolean {
  const candidate = error as { name?: unknown; CancellationReasons?: { Code?: unknown }[] };
  return (
    candidate.name === 'TransactionCanceledException' &&
    Array.isArray(candidate.CancellationReasons) &&
    candidate.CancellationReasons.some(
      (reason) => typeof reason?.Code === 'string' && TRANSIENT_CANCELLATION_CODES.includes(reason.Code),
    )
  );
}

/**
 * Maps a failed DynamoDB call: throttling and connection failures become {@link DatabaseUnavailableError}
 * (retryable; the API answers 503 `SERVICE_UNAVAILABLE` with `Retry-After`); every other error is rethrown as it is.
 */
export function mapDynamoError(error: unknown): never {
  if (error instanceof DatabaseUnavailableError) throw error;
  if (isTransientDynamoError(error)) throw new DatabaseUnavailableError(error);
  throw error;
}

/** Runs one DynamoDB operation and passes its failure through {@link mapDynamoError}. */
export async function withDynamoErrors<T>(operation: () => Promise<T>): Promise<T> {
  try {
    return await operation();
  } catch (error) {
    return mapDynamoError(error);
  }
}

/** True for the error DynamoDB raises when a write's condition does not hold. */
export function isConditionFailed(error: unknown): boolean {
  return (
    typeof error === 'object' &&
    error !== null &&
    (error as { name?: unknown }).name === 'ConditionalCheckFailedException'
  );
}

/** A cancelled transaction: one of its conditions did not hold (not throttling, not a conflict). */
export function isTransactionConditionFailed(error: unknown): boolean {
  return hasCancellationReason(error, 'ConditionalCheckFailed');
}

/** The transaction collided with another one on the same items. */
export function isTransactionConflict(error: unknown): boolean {
  if (
    typeof error === 'object' &&
    error !== null &&
    (error as { name?: unknown }).name === 'TransactionConflictException'
  )
    return true;
  return hasCancellationReason(error, 'TransactionConflict');
}

function hasCancellationReason(error: unknown, code: string): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const candidate = error as { name?: unknown; CancellationReasons?: { Code?: unknown }[] };
  return (
    candidate.name === 'TransactionCanceledException' &&
    Array.isArray(candidate.CancellationReasons) &&
    candidate.CancellationReasons.some((reason) => reason?.Code === code)
  );
}

const BATCH_SIZE = 25;

/** The backoff of the control table's own retries: transaction conflicts, contention, unprocessed batch items. */
export const CONTROL_BACKOFF = { baseMs: 25, maxMs: 1_000 } as const;

/** A batch call's unprocessed items are sent again, 8 calls in all. */
export const BATCH_RETRY = { maxAttempts: 8, ...CONTROL_BACKOFF } as const;

/**
 * Deletes items by their `PK`/`SK` in BatchWriteItem calls of 25, retrying unprocessed items with backoff and jitter;
 * still unprocessed after 8 attempts: {@link DatabaseUnavailableError}. Deleting a missing key is a no-op.
 */
export async function deleteKeys(
  table: ControlTable,
  keys: readonly Record<string, unknown>[],
): Promise<void> {
  for (let start = 0; start < keys.length; start += BATCH_SIZE) {
    let requests = keys
      .slice(start, start + BATCH_SIZE)
      .map((key) => ({ DeleteRequest: { Key: { PK: key.PK, SK: key.SK } } }));
    const outcome = await retrying(BATCH_RETRY, async () => {
      const result = await withDynamoErrors(() =>
        table.client.send(new BatchWriteCommand({ RequestItems: { [table.tableName]: requests } })),
      );
      requests = (result.UnprocessedItems?.[table.tableName] ?? []) as typeof requests;
      return requests.length > 0 ? RETRY : undefined;
    });
    if (outcome === RETRY)
      throw new DatabaseUnavailableError(new Error('BatchWriteItem left items unprocessed'));
  }
}
