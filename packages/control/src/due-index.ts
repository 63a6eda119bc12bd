import { QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { DestinationStatus } from '@sluice/core';
import {
  type ControlTable,
  type ControlTableOptions,
  isConditionFailed,
  mapDynamoError,
  resolveControlTable,
  withDynamoErrors,
} from './client.js';
import { DUE_INDEX_NAME, destinationSk, dueAt, dueKeys, workspacePk } from './items.js';

type Item = Record<string, unknown>;

/** A destination found on the due index. */
export interface DueEntry {
  workspaceId: string;
  destinationId: string;
  /** The index sort key as read, for {@link ExportStateStore.markDispatched}. */
  dueAt: string;
  status: DestinationStatus | undefined;
  manualRunQueued: boolean;
}

/** Parses `<ISO>#<workspaceId>#<destinationId>`. */
function parseDueAt(value: string): { workspaceId: string; destinationId: string } | undefined {
  const [, workspaceId, destinationId] = value.split('#');
  if (workspaceId === undefined || destinationId === undefined) return undefined;
  return { workspaceId, destinationId };
}

/** The sparse due index of destinations. */
export class DueIndex {
  private readonly table: ControlTable;

  constructor(options: ControlTableOptions = {}) {
    this.table = resolveControlTable(options);
  }

  /**
   * Every destination due at `now` (its `dueAt` at or before now), across all `DUE#<n>` partitions of the
   * sparse index, oldest first within a partition.
   */
  async queryDue(now: Date): Promise<DueEntry[]> {
    const upper = `${now.toISOString()}#\uffff`;
    const due: DueEntry[] = [];
    for (const key of dueKeys()) {
      let startKey: Item | undefined;
      do {
        const page = await withDynamoErrors(() =>
          this.table.client.send(
            new QueryCommand({
              TableName: this.table.tableName,
              IndexName: DUE_INDEX_NAME,
              KeyConditionExpression: 'dueKey = :key AND dueAt <= :upper',
              ExpressionAttributeNames: { '#status': 'status' },
              ExpressionAttributeValues: { ':key': key, ':upper': upper },
              ProjectionExpression: 'dueAt, #status, manualRunQueued',
              ExclusiveStartKey: startKey,
            }),
          ),
        );
        for (const item of page.Items ?? []) {
          const value = String(item.dueAt);
          const ids = parseDueAt(value);
          if (ids === undefined) continue;
          due.push({
            ...ids,
            dueAt: value,
            status: typeof item.status === 'string' ? (item.status as DestinationStatus) : undefined,
            manualRunQueued: item.manualRunQueued === true,
          });
        }
        startKey = page.LastEvaluatedKey;
      } while (startKey !== undefined);
    }
    return due;
  }

  /**
   * Marks a due destination as dispatched: moves its due index entry (only `dueAt`, not `nextRunAt`) to
   * `untilIso`, conditional on the entry read by {@link queryDue}, so of two overlapping dispatch ticks
   * only one starts a run. The run's commit or failure sets the real next time. Returns false when the
   * entry changed (another tick took it, the destination was paused, deleted or rescheduled).
   */
  async markDispatched(entry: DueEntry, untilIso: string): Promise<boolean> {
    try {
      await this.table.client.send(
        new UpdateCommand({
          TableName: this.table.tableName,
          Key: { PK: workspacePk(entry.workspaceId), SK: destinationSk(entry.destinationId) },
          UpdateExpression: 'SET dueAt = :next',
          ConditionExpression: 'dueAt = :expected',
          ExpressionAttributeValues: {
            ':expected': entry.dueAt,
            ':next': dueAt(untilIso, entry.workspaceId, entry.destinationId),
          },
        }),
      );
      return true;
    } catch (error) {
      if (isConditionFailed(error)) return false;
      return mapDynamoError(error);
    }
  }
}
