import { DeleteCommand, GetCommand, paginateQuery, paginateScan, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { EventDataset } from '@sluice/core';
import {
  type ControlTable,
  type ControlTableOptions,
  isConditionFailed,
  mapDynamoError,
  resolveControlTable,
  withDynamoErrors,
} from './client.js';
import { WORKSPACE_SK, workspacePk } from './items.js';

/** `ARCHIVE#<dataset>`: sort key, in the workspace's partition, of the event archive's cursor for a dataset. */
export function archiveCursorSk(dataset: EventDataset): string {
  return `ARCHIVE#${dataset}`;
}

/** `ARCHIVE#<dataset>#LATE#<hourMs, 13 digits>`: an hour that rows were imported into after it may have been archived. */
export function lateHourSk(dataset: EventDataset, hourMs: number): string {
  return `${archiveCursorSk(dataset)}#LATE#${String(hourMs).padStart(13, '0')}`;
}

/** An hour marked late, with how many times it was marked (the compaction clears it only if unchanged). */
export interface LateHour {
  hourMs: number;
  marks: number;
}

/**
 * How far the event archive reaches for one (workspace, dataset): every UTC hour starting at or after
 * `startMs` and ending at or before `throughMs` is archived (an hour without rows has no object).
 */
export interface ArchiveCoverage {
  /** The start of the first archived hour (epoch ms). */
  startMs: number;
  /** The end of the last archived hour (epoch ms, exclusive): the archive cursor. */
  throughMs: number;
}

/**
 * The event archive's cursors in the control table (`WS#<workspaceId>` / `ARCHIVE#<dataset>`: `startMs`,
 * `throughMs`, `updatedAt`). The compaction advances a cursor one hour at a time, conditionally on the value
 * it read, so two compactions of the same dataset never both move it; readers use it to know which hours the
 * archive holds.
 */
export class ArchiveCursorStore {
  private readonly table: ControlTable;

  constructor(options: ControlTableOptions) {
    this.table = resolveControlTable(options);
  }

  /** The archive's coverage of a dataset, or undefined before its first hour is archived. */
  async get(workspaceId: string, dataset: EventDataset): Promise<ArchiveCoverage | undefined> {
    const output = await withDynamoErrors(() =>
      this.table.client.send(
        new GetCommand({
          TableName: this.table.tableName,
          Key: { PK: workspacePk(workspaceId), SK: archiveCursorSk(dataset) },
          ProjectionExpression: 'startMs, throughMs',
        }),
      ),
    );
    const item = output.Item;
    if (typeof item?.startMs !== 'number' || typeof item.throughMs !== 'number') return undefined;
    return { startMs: item.startMs, throughMs: item.throughMs };
  }

  /**
   * Moves the cursor from `expected` (undefined: no cursor yet) to `next`. False when the stored cursor is
   * no longer `expected` (another compaction moved it): the caller stops.
   */
  async advance(
    workspaceId: string,
    dataset: EventDataset,
    expected: ArchiveCoverage | undefined,
    next: ArchiveCoverage,
    now: Date = new Date(),
  ): Promise<boolean> {
    try {
      await this.table.client.send(
        new UpdateCommand({
          TableName: this.table.tableName,
          Key: { PK: workspacePk(workspaceId), SK: archiveCursorSk(dataset) },
          UpdateExpression:
            'SET startMs = :start, throughMs = :through, dataset = :dataset, updatedAt = :now',
          ConditionExpression:
            expected === undefined
              ? 'attribute_not_exists(throughMs)'
              : 'throughMs = :expectedThrough AND startMs = :expectedStart',
          ExpressionAttributeValues: {
            ':start': next.startMs,
            ':through': next.throughMs,
            ':dataset': dataset,
            ':now': now.toISOString(),
            ...(expected !== undefined
              ? { ':expectedThrough': expected.throughMs, ':expectedStart': expected.startMs }
              : {}),
          },
        }),
      );
      return true;
    } catch (error) {
      if (isConditionFailed(error)) return false;
      return mapDynamoError(error);
    }
  }

  /**
   * Marks an hour of a dataset late: rows were written into it with an explicit recorded time after it ended,
   * so its archive object may lack them. The compaction archives it again (merging) and clears the mark.
   */
  async markLate(workspaceId: string, dataset: EventDataset, hourMs: number): Promise<void> {
    await withDynamoErrors(() =>
      this.table.client.send(
        new UpdateCommand({
          TableName: this.table.tableName,
          Key: { PK: workspacePk(workspaceId), SK: lateHourSk(dataset, hourMs) },
          UpdateExpression: 'ADD marks :one SET hourMs = :hour, dataset = :dataset',
          ExpressionAttributeValues: { ':one': 1, ':hour': hourMs, ':dataset': dataset },
        }),
      ),
    );
  }

  /** The hours of a dataset marked late, oldest first. */
  async lateHours(workspaceId: string, dataset: EventDataset): Promise<LateHour[]> {
    const hours: LateHour[] = [];
    const pages = paginateQuery(
      { client: this.table.client },
      {
        TableName: this.table.tableName,
        KeyConditionExpression: 'PK = :pk AND begins_with(SK, :prefix)',
        ExpressionAttributeValues: {
          ':pk': workspacePk(workspaceId),
          ':prefix': `${archiveCursorSk(dataset)}#LATE#`,
        },
        ProjectionExpression: 'hourMs, marks',
        ConsistentRead: true,
      },
    );
    await withDynamoErrors(async () => {
      for await (const page of pages) {
        for (const item of page.Items ?? [])
          hours.push({ hourMs: Number(item.hourMs), marks: Number(item.marks) });
      }
    });
    return hours;
  }

  /** Clears a late mark if it is still as read (a mark added since stays for the next compaction). */
  async clearLate(workspaceId: string, dataset: EventDataset, late: LateHour): Promise<boolean> {
    try {
      await this.table.client.send(
        new DeleteCommand({
          TableName: this.table.tableName,
          Key: { PK: workspacePk(workspaceId), SK: lateHourSk(dataset, late.hourMs) },
          ConditionExpression: 'marks = :marks',
          ExpressionAttributeValues: { ':marks': late.marks },
        }),
      );
      return true;
    } catch (error) {
      if (isConditionFailed(error)) return false;
      return mapDynamoError(error);
    }
  }

  /**
   * Every workspace id (a Scan of the control table for workspace items, projecting their keys): what the
   * scheduled compaction walks. Its cost grows with the control table, read once per compaction.
   */
  async *listWorkspaceIds(): AsyncGenerator<string> {
    const pages = paginateScan(
      { client: this.table.client },
      {
        TableName: this.table.tableName,
        FilterExpression: 'SK = :workspace',
        ExpressionAttributeValues: { ':workspace': WORKSPACE_SK },
        ProjectionExpression: 'PK',
      },
    );
    try {
      for await (const page of pages) {
        for (const item of page.Items ?? []) {
          const pk = String(item.PK);
          if (pk.startsWith('WS#')) yield pk.slice(3);
        }
      }
    } catch (error) {
      mapDynamoError(error);
    }
  }
}
