import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { ControlTable } from './client.js';
import { withDynamoErrors } from './client.js';
import { isKeySafeId, oldestRunSk, runsPk } from './items.js';

/** The statuses of a run, as the API reports them. */
export const RUN_STATUSES = ['running', 'succeeded', 'failed'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

/** What one dataset contributed to a run: rows, files, bytes and the window or snapshot exported. */
export interface DatasetRunStats {
  rows: number;
  files: number;
  bytes: number;
  /** Event datasets: the exported window, `fromMs` exclusive, `toMs` inclusive. */
  fromMs?: number;
  toMs?: number;
  /** Subscribers: the snapshot date, `YYYY-MM-DD`. */
  snapshotDate?: string;
  [key: string]: unknown;
}

/** One run, exactly the API's `DataExportRun`. */
export interface DataExportRun {
  id: string;
  destinationId: string;
  status: RunStatus;
  isManual: boolean;
  rowCount: number;
  fileCount: number;
  byteCount: number;
  stats: Record<string, DatasetRunStats>;
  error: string | null;
  startedAt: string;
  finishedAt: string | null;
}

/** Runs listed when the caller names no limit, and the most it may ask for. */
export const DEFAULT_RUNS_LIMIT = 20;
export const MAX_RUNS_LIMIT = 100;

/** Maps a stored run item to the API's shape, dropping the keys, `workspaceId` and `expiresAt`. */
export function toDataExportRun(item: Record<string, unknown>): DataExportRun {
  const number = (value: unknown): number =>
    typeof value === 'number' && Number.isFinite(value) ? value : 0;
  const stringOrNull = (value: unknown): string | null => (typeof value === 'string' ? value : null);
  const status = RUN_STATUSES.includes(item.status as RunStatus) ? (item.status as RunStatus) : 'failed';
  const stats =
    typeof item.stats === 'object' && item.stats !== null && !Array.isArray(item.stats)
      ? (item.stats as Record<string, DatasetRunStats>)
      : {};
  return {
    id: String(item.id),
    destinationId: String(item.destinationId),
    status,
    isManual: item.isManual === true,
    rowCount: number(item.rowCount),
    fileCount: number(item.fileCount),
    byteCount: number(item.byteCount),
    stats,
    error: stringOrNull(item.error),
    startedAt: String(item.startedAt),
    finishedAt: stringOrNull(item.finishedAt),
  };
}

/**
 * Lists a destination's runs of the last 14 days, newest first, at most `limit` (clamped to 1..100).
 * One Query on `RUNS#<workspaceId>#<destinationId>` with `SK > RUN#<now - 14 days>`, read backwards.
 * Does not check that the destination exists: the caller does, for its 404.
 */
export async function listRuns(
  table: ControlTable,
  workspaceId: string,
  destinationId: string,
  options: { limit?: number; now?: Date } = {},
): Promise<DataExportRun[]> {
  if (!isKeySafeId(workspaceId) || !isKeySafeId(destinationId)) return [];
  const limit = Math.min(MAX_RUNS_LIMIT, Math.max(1, Math.floor(options.limit ?? DEFAULT_RUNS_LIMIT)));
  const now = options.now ?? new Date();
  const runs: DataExportRun[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await withDynamoErrors(() =>
      table.client.send(
        new QueryCommand({
          TableName: table.tableName,
          KeyConditionExpression: 'PK = :pk AND SK > :oldest',
          ExpressionAttributeValues: {
            ':pk': runsPk(workspaceId, destinationId),
            ':oldest': oldestRunSk(now),
          },
          ScanIndexForward: false,
          Limit: limit - runs.length,
          ExclusiveStartKey: startKey,
        }),
      ),
    );
    for (const item of page.Items ?? []) runs.push(toDataExportRun(item));
    startKey = page.LastEvaluatedKey;
  } while (startKey !== undefined && runs.length < limit);
  return runs;
}
