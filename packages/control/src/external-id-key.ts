import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { SealedSecret } from '@sluice/core';
import {
  type ControlTable,
  type ControlTableOptions,
  isConditionFailed,
  resolveControlTable,
  withDynamoErrors,
} from './client.js';

/** The one item of the external-ID key: `PK = SLUICE#EXTERNAL_ID_KEY`, `SK = KEY`. */
const KEY = { PK: 'SLUICE#EXTERNAL_ID_KEY', SK: 'KEY' };

/**
 * Sluice's external-ID key, as stored: sealed with the secrets KMS key (the caller seals and opens it), in one
 * item of the control table, written once (the first writer wins) and kept with the table (a restore keeps it).
 */
export class ExternalIdKeyStore {
  private readonly table: ControlTable;

  constructor(options: ControlTableOptions) {
    this.table = resolveControlTable(options);
  }

  /** The sealed key, or undefined before the first one is stored. */
  async getSealedExternalIdKey(): Promise<SealedSecret | undefined> {
    const result = await withDynamoErrors(() =>
      this.table.client.send(
        new GetCommand({ TableName: this.table.tableName, Key: KEY, ConsistentRead: true }),
      ),
    );
    return result.Item?.sealed as SealedSecret | undefined;
  }

  /** Stores `sealed` unless a key is stored already; true when this one was stored. */
  async putSealedExternalIdKey(sealed: SealedSecret, now: Date = new Date()): Promise<boolean> {
    try {
      await withDynamoErrors(() =>
        this.table.client.send(
          new PutCommand({
            TableName: this.table.tableName,
            Item: { ...KEY, sealed, createdAt: now.toISOString() },
            ConditionExpression: 'attribute_not_exists(PK)',
          }),
        ),
      );
      return true;
    } catch (error) {
      if (isConditionFailed(error)) return false;
      throw error;
    }
  }
}
