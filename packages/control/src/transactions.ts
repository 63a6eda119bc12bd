import { TransactWriteCommand, type TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import { RETRY, retrying } from '@sluice/core';
import { CONTROL_BACKOFF, type ControlTable, mapDynamoError } from './client.js';

/** One item of a DynamoDB transaction. */
export type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

/** The cancellation reason codes of a cancelled transaction, in item order ('None' for items that passed). */
export function cancellationCodes(error: unknown): string[] | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const candidate = error as { name?: unknown; CancellationReasons?: { Code?: unknown }[] };
  if (candidate.name !== 'TransactionCanceledException' || !Array.isArray(candidate.CancellationReasons)) {
    return undefined;
  }
  return candidate.CancellationReasons.map((reason) =>
    typeof reason?.Code === 'string' ? reason.Code : 'None',
  );
}

/** The transaction collided with another one on the same items. */
function isTransactionConflict(error: unknown): boolean {
  if ((error as { name?: unknown } | null)?.name === 'TransactionConflictException') return true;
  return cancellationCodes(error)?.includes('TransactionConflict') === true;
}

/** A transaction that conflicted is tried again up to 5 times. */
const CONFLICT_RETRY = { maxAttempts: 6, ...CONTROL_BACKOFF };

/**
 * Runs one transaction. Returns `true` when it committed, or the index of the first item whose condition
 * failed. A conflict with another transaction in flight is retried shortly (then its outcome decides);
 * anything else is mapped like every store error (transient → retryable `DatabaseUnavailableError`).
 */
export async function transact(table: ControlTable, items: TransactItem[]): Promise<true | number> {
  let conflict: unknown;
  const outcome = await retrying(CONFLICT_RETRY, async () => {
    try {
      await table.client.send(new TransactWriteCommand({ TransactItems: items }));
      return true as const;
    } catch (error) {
      const codes = cancellationCodes(error);
      const failed = codes?.indexOf('ConditionalCheckFailed') ?? -1;
      if (failed >= 0) return failed;
      if (!isTransactionConflict(error)) return mapDynamoError(error);
      conflict = error;
      return RETRY;
    }
  });
  return outcome === RETRY ? mapDynamoError(conflict) : outcome;
}
