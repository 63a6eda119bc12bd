import { GetCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import {
  type ControlTable,
  type ControlTableOptions,
  isConditionFailed,
  mapDynamoError,
  resolveControlTable,
  withDynamoErrors,
} from './client.js';
import { isKeySafeId, oldestRunSk, runExpiresAt, runSk, runsPk } from './items.js';
import { type LeaseFence, leaseCondition } from './leases.js';
import { type TransactItem, transact } from './transactions.js';

/** The statuses of a run, as the API reports them. */
export const RUN_STATUSES = ['running', 'succeeded', 'failed'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

/**
 * A dataset's part of a run (its job in the history): `running` while the run works, then `succeeded` (also
 * with no rows: "No rows") or `failed` (a writer of it failed after its retries).
 */
export type DatasetRunStatus = RunStatus;

/** What one dataset contributed to a run: rows, files, bytes and the window or snapshot exported. */
export interface DatasetRunStats {
  /** Absent on records written before per-dataset statuses. */
  status?: DatasetRunStatus;
  rows: number;
  files: number;
  bytes: number;
  /** The time its writers spent on it in this run, summed over its spans (0 when nothing was written). */
  durationMs?: number;
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

/**
 * The `stats` of a run that failed before its Commit moved anything (RecordFailure, or a run settled after
 * its lease expired): each dataset it had begun (the entries of its running record) `failed`, with no rows
 * committed. Pure.
 */
export function failedRunStats(running: DataExportRun | undefined): Record<string, DatasetRunStats> {
  return Object.fromEntries(
    Object.keys(running?.stats ?? {}).map((dataset) => [
      dataset,
      { status: 'failed' as const, rows: 0, files: 0, bytes: 0, durationMs: 0 },
    ]),
  );
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
 * Lists a destination's runs of the last 14 days, newest first, at most `limit` (clamped to 1..100), from
 * just below `after` (a run listed on the previous page) when given.
 * One Query on `RUNS#<workspaceId>#<destinationId>` with `SK > RUN#<now - 14 days>`, read backwards.
 * Does not check that the destination exists: the caller does, for its 404.
 */
export async function listRuns(
  table: ControlTable,
  workspaceId: string,
  destinationId: string,
  options: { limit?: number; now?: Date; after?: Pick<DataExportRun, 'startedAt' | 'id'> } = {},
): Promise<DataExportRun[]> {
  if (!isKeySafeId(workspaceId) || !isKeySafeId(destinationId)) return [];
  const limit = Math.min(MAX_RUNS_LIMIT, Math.max(1, Math.floor(options.limit ?? DEFAULT_RUNS_LIMIT)));
  const now = options.now ?? new Date();
  const runs: DataExportRun[] = [];
  let startKey: Record<string, unknown> | undefined = options.after
    ? { PK: runsPk(workspaceId, destinationId), SK: runSk(options.after.startedAt, options.after.id) }
    : undefined;
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

/** A run record as the engine writes it: the API's `DataExportRun` plus its workspace. */
export interface RunRecord extends DataExportRun {
  workspaceId: string;
}

/** The final fields of a run. */
export interface RunOutcome {
  status: Exclude<RunStatus, 'running'>;
  rowCount: number;
  fileCount: number;
  byteCount: number;
  stats: Record<string, DatasetRunStats>;
  error: string | null;
  finishedAt: string;
}

/** Identifies a run record. */
export type RunKey = Pick<RunRecord, 'workspaceId' | 'destinationId' | 'id' | 'startedAt'>;

/** Rows, files and bytes one progress save adds to a running run's counts. */
export interface RunCountsAdded {
  dataset: string;
  rows: number;
  files: number;
  bytes: number;
}

/**
 * The update that adds a writer's newly written files to a `running` run record: the dataset's `stats`
 * entry (which {@link RunStore.start} wrote as zeros) and the run's totals. Its condition fails when the
 * record is missing, finished, or has no entry for the dataset. Commit later overwrites all of these with
 * the committed windows' totals.
 */
export function runCountsItem(tableName: string, key: RunKey, added: RunCountsAdded): TransactItem {
  return {
    Update: {
      TableName: tableName,
      Key: { PK: runsPk(key.workspaceId, key.destinationId), SK: runSk(key.startedAt, key.id) },
      UpdateExpression:
        'SET #stats.#dataset.#rows = #stats.#dataset.#rows + :rows, ' +
        '#stats.#dataset.#files = #stats.#dataset.#files + :files, ' +
        '#stats.#dataset.#bytes = #stats.#dataset.#bytes + :bytes ' +
        'ADD rowCount :rows, fileCount :files, byteCount :bytes',
      ConditionExpression: '#status = :running AND attribute_exists(#stats.#dataset.#rows)',
      ExpressionAttributeNames: {
        '#status': 'status',
        '#stats': 'stats',
        '#dataset': added.dataset,
        '#rows': 'rows',
        '#files': 'files',
        '#bytes': 'bytes',
      },
      ExpressionAttributeValues: {
        ':running': 'running',
        ':rows': added.rows,
        ':files': added.files,
        ':bytes': added.bytes,
      },
    },
  };
}

/** A run record as stored: its keys, the run, and `expiresAt` (startedAt + 14 days). */
function runItem(run: RunRecord): Record<string, unknown> {
  return {
    PK: runsPk(run.workspaceId, run.destinationId),
    SK: runSk(run.startedAt, run.id),
    ...run,
    expiresAt: runExpiresAt(run.startedAt),
  };
}

/**
 * Run records (`RUNS#<workspaceId>#<destinationId>` / `RUN#<startedAt>#<runId>`, 14 days): written by the
 * engine, read by the API ({@link listRuns}). A record is written `running` under the run's lease and
 * finished once: finishing an already finished record changes nothing, so a retried or duplicate Commit,
 * RecordFailure or settle of an expired run can never overwrite an outcome.
 */
export class RunStore {
  private readonly table: ControlTable;

  constructor(options: ControlTableOptions) {
    this.table = resolveControlTable(options);
  }

  /**
   * Writes a run record (`expiresAt` = startedAt + 14 days) while the run's lease holds; the same run's
   * earlier `running` record is overwritten, a finished one never. Returns false when the fence failed.
   */
  async start(run: RunRecord, fence: LeaseFence): Promise<boolean> {
    const outcome = await transact(this.table, [
      leaseCondition(this.table.tableName, fence),
      {
        Put: {
          TableName: this.table.tableName,
          Item: runItem(run),
          ConditionExpression: 'attribute_not_exists(PK) OR #status = :running',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: { ':running': 'running' },
        },
      },
    ]);
    return outcome === true;
  }

  /**
   * Records a scheduled run that had nothing to export (Dispatch decided so without a workflow): a finished
   * `succeeded` record with no rows. The key is derived from the slot by the caller, and the write is
   * conditional on it being new, so a slot is recorded once however many Dispatch ticks look at it.
   * Returns false when the slot was already recorded.
   */
  async recordIdle(run: RunRecord): Promise<boolean> {
    try {
      await this.table.client.send(
        new PutCommand({
          TableName: this.table.tableName,
          Item: runItem(run),
          ConditionExpression: 'attribute_not_exists(PK)',
        }),
      );
      return true;
    } catch (error) {
      if (isConditionFailed(error)) return false;
      return mapDynamoError(error);
    }
  }

  /** Reads one run record, or `undefined`. */
  async get(key: RunKey): Promise<RunRecord | undefined> {
    const result = await withDynamoErrors(() =>
      this.table.client.send(
        new GetCommand({
          TableName: this.table.tableName,
          Key: { PK: runsPk(key.workspaceId, key.destinationId), SK: runSk(key.startedAt, key.id) },
          ConsistentRead: true,
        }),
      ),
    );
    if (result.Item === undefined) return undefined;
    return { ...toDataExportRun(result.Item), workspaceId: String(result.Item.workspaceId) };
  }

  /**
   * Records a run's outcome, once. Creates the record when it is missing (a run that died before writing
   * it) and `createIfMissing` is set; otherwise only a `running` record is finished. Returns false when the
   * record was already finished (or is missing and not to be created).
   */
  async finish(
    key: RunKey & { isManual?: boolean },
    outcome: RunOutcome,
    options: { createIfMissing?: boolean } = {},
  ): Promise<boolean> {
    try {
      await this.table.client.send(new UpdateCommand(this.finishUpdate(key, outcome, options)));
      return true;
    } catch (error) {
      if (isConditionFailed(error)) return false;
      return mapDynamoError(error);
    }
  }

  /**
   * The update of {@link finish} as a transaction item, so a run's outcome can be written together with the
   * cursor moves it reports (Commit): a retry then never reports the same windows as zero rows.
   */
  finishItem(key: RunKey & { isManual?: boolean }, outcome: RunOutcome): TransactItem {
    return { Update: this.finishUpdate(key, outcome, {}) };
  }

  private finishUpdate(
    key: RunKey & { isManual?: boolean },
    outcome: RunOutcome,
    options: { createIfMissing?: boolean },
  ) {
    return {
      TableName: this.table.tableName,
      Key: { PK: runsPk(key.workspaceId, key.destinationId), SK: runSk(key.startedAt, key.id) },
      UpdateExpression:
        'SET id = :id, destinationId = :destinationId, workspaceId = :workspaceId, startedAt = :startedAt, ' +
        'isManual = if_not_exists(isManual, :isManual), #status = :status, rowCount = :rowCount, ' +
        'fileCount = :fileCount, byteCount = :byteCount, stats = :stats, #error = :error, ' +
        'finishedAt = :finishedAt, expiresAt = :expiresAt',
      ConditionExpression: options.createIfMissing
        ? 'attribute_not_exists(PK) OR #status = :running'
        : '#status = :running',
      ExpressionAttributeNames: { '#status': 'status', '#error': 'error' },
      ExpressionAttributeValues: {
        ':id': key.id,
        ':destinationId': key.destinationId,
        ':workspaceId': key.workspaceId,
        ':startedAt': key.startedAt,
        ':isManual': key.isManual ?? false,
        ':status': outcome.status,
        ':running': 'running',
        ':rowCount': outcome.rowCount,
        ':fileCount': outcome.fileCount,
        ':byteCount': outcome.byteCount,
        ':stats': outcome.stats,
        ':error': outcome.error,
        ':finishedAt': outcome.finishedAt,
        ':expiresAt': runExpiresAt(key.startedAt),
      },
    };
  }
}
