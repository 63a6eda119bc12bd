import {
  DeleteCommand,
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  type TransactWriteCommandInput,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { type Dataset, DATASETS, type DestinationStatus } from '@sluice/core';
import {
  type ControlTable,
  type ControlTableOptions,
  isConditionFailed,
  isTransactionConditionFailed,
  isTransactionConflict,
  mapDynamoError,
  resolveControlTable,
  withDynamoErrors,
} from './client.js';
import { type DueEntry, DueIndex, dueIndexUpdate } from './due-index.js';
import {
  cursorSk,
  cursorSkPrefix,
  destinationSk,
  leaseSk,
  runExpiresAt,
  runSk,
  runsPk,
  workspacePk,
} from './items.js';
import type { DataExportRun, DatasetRunStats, RunStatus } from './runs.js';

/**
 * The export engine's state in the control table (docs/internals.md): cursors with their planned windows,
 * the lease that fences a destination's runs, run records, the run-state fields of the destination item and
 * the due index. Every cursor write is a transaction that checks the lease token (or that no lease is held)
 * and the cursor's expected old value, so two executions can never both advance it.
 */

type Item = Record<string, unknown>;
type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

/** An event window planned but not yet committed, with the run that planned it. */
export interface PlannedWindow {
  fromMs: number;
  toMs: number;
  runId: string;
}

/** A subscriber snapshot planned but not yet complete. */
export interface PlannedSnapshot {
  date: string;
  runId: string;
}

/** One dataset's cursor as stored. */
export interface CursorState {
  dataset: Dataset;
  /** Events: everything recorded through this instant is written. Absent until the first commit. */
  exportedThroughMs?: number;
  /** Subscribers: the date of the last complete snapshot. */
  snapshotDate?: string;
  /** Events: the windows planned and not committed, in order. */
  plannedWindows: PlannedWindow[];
  /** Subscribers: the snapshot planned and not complete. */
  plannedSnapshot?: PlannedSnapshot;
}

/** The lease a run holds on its destination. */
export interface Lease {
  workspaceId: string;
  destinationId: string;
  runId: string;
  token: string;
  /** ISO start of the run that holds it (also the run record's sort key). */
  startedAt: string;
  expiresAtMs: number;
}

/** What fences a cursor write: the lease the writer holds, or "no live lease at `nowMs`" (the dispatcher). */
export type CursorFence =
  | { lease: Lease }
  | { noLiveLeaseAt: number; workspaceId: string; destinationId: string };

/** The value a cursor write expects to find, and the value it writes. */
export interface CursorPosition {
  exportedThroughMs?: number;
  snapshotDate?: string;
}

/** One cursor write of {@link ExportStateStore.savePlanned} or {@link ExportStateStore.advanceCursors}. */
export interface CursorWrite {
  dataset: Dataset;
  /** The position the cursor must still hold (absent fields: the cursor must not have them yet). */
  expected: CursorPosition;
  /** The new position; omit to keep the position and only replace the planned work. */
  next?: CursorPosition;
  /** The new planned work: windows for events, at most one snapshot for subscribers. */
  plannedWindows?: PlannedWindow[];
  plannedSnapshot?: PlannedSnapshot | null;
}

/** A run record as the engine writes it: the API's `DataExportRun` plus its workspace. */
export interface RunRecord extends DataExportRun {
  workspaceId: string;
}

/** The final fields of a run. */
export interface RunOutcome {
  status: RunStatus;
  rowCount: number;
  fileCount: number;
  byteCount: number;
  stats: Record<string, DatasetRunStats>;
  error: string | null;
  finishedAt: string;
}

/** Run-state changes of the destination item; absent fields are left alone. */
export interface RunStateChanges {
  status?: DestinationStatus;
  /** Also moves the due index entry (kept only while the destination is enabled). */
  nextRunAt?: string | null;
  lastRunAt?: string;
  lastSuccessAt?: string;
  lastError?: string | null;
  lastErrorAt?: string | null;
  /** A number to set, or 'increment' to add one. */
  consecutiveFailures?: number | 'increment';
  /** Added to `totalRowsExported`. */
  addRowsExported?: number;
  manualRunQueued?: boolean;
  /** Only apply when the destination's `configVersion` is still this. */
  expectedConfigVersion?: number;
  /** Only apply when the due index entry is still this one (as read by `queryDue`). */
  expectedDueAt?: string;
}

/** Options of {@link ExportStateStore.claimLease}. */
export interface ClaimLeaseInput {
  workspaceId: string;
  destinationId: string;
  runId: string;
  token: string;
  startedAt: string;
  nowMs: number;
  durationMs: number;
}

const MAX_CONFLICT_RETRIES = 5;

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function toCursor(dataset: Dataset, item: Item | undefined): CursorState {
  const cursor: CursorState = { dataset, plannedWindows: [] };
  if (item === undefined) return cursor;
  if (typeof item.exportedThroughMs === 'number') cursor.exportedThroughMs = item.exportedThroughMs;
  if (typeof item.snapshotDate === 'string') cursor.snapshotDate = item.snapshotDate;
  const planned = Array.isArray(item.planned) ? (item.planned as Item[]) : [];
  for (const entry of planned) {
    const runId = typeof entry.runId === 'string' ? entry.runId : '';
    if (typeof entry.fromMs === 'number' && typeof entry.toMs === 'number') {
      cursor.plannedWindows.push({ fromMs: entry.fromMs, toMs: entry.toMs, runId });
    } else if (typeof entry.date === 'string') {
      cursor.plannedSnapshot = { date: entry.date, runId };
    }
  }
  return cursor;
}

/** See the module comment. Takes `{ client?, tableName? }` like every control store. */
export class ExportStateStore {
  private readonly table: ControlTable;
  private readonly dueIndex: DueIndex;

  constructor(options: ControlTableOptions = {}) {
    this.table = resolveControlTable(options);
    this.dueIndex = new DueIndex(this.table);
  }

  /**
   * Claims the destination's lease with one conditional put: it succeeds when no lease exists or the held
   * one expired. When the same run claims again (a retried ClaimAndPlan), its existing lease is returned
   * unchanged. Returns `undefined` when another live run holds it.
   */
  async claimLease(input: ClaimLeaseInput): Promise<Lease | undefined> {
    const lease: Lease = {
      workspaceId: input.workspaceId,
      destinationId: input.destinationId,
      runId: input.runId,
      token: input.token,
      startedAt: input.startedAt,
      expiresAtMs: input.nowMs + input.durationMs,
    };
    try {
      await this.table.client.send(
        new PutCommand({
          TableName: this.table.tableName,
          Item: {
            PK: workspacePk(input.workspaceId),
            SK: leaseSk(input.destinationId),
            runId: lease.runId,
            token: lease.token,
            startedAt: lease.startedAt,
            expiresAtMs: lease.expiresAtMs,
            // Let DynamoDB clean up a lease left behind by a crashed run, long after it expired.
            expiresAt: Math.floor(lease.expiresAtMs / 1000) + 86_400,
          },
          ConditionExpression: 'attribute_not_exists(PK) OR expiresAtMs < :now',
          ExpressionAttributeValues: { ':now': input.nowMs },
        }),
      );
      return lease;
    } catch (error) {
      if (!isConditionFailed(error)) return mapDynamoError(error);
      const old = await this.getLeaseItem(input.workspaceId, input.destinationId);
      if (old !== undefined && old.runId === input.runId && typeof old.token === 'string') {
        return {
          ...lease,
          token: old.token,
          startedAt: typeof old.startedAt === 'string' ? old.startedAt : lease.startedAt,
          expiresAtMs: typeof old.expiresAtMs === 'number' ? old.expiresAtMs : lease.expiresAtMs,
        };
      }
      return undefined;
    }
  }

  /** Releases the lease if this token still holds it. Returns false when it did not. */
  async releaseLease(lease: Pick<Lease, 'workspaceId' | 'destinationId' | 'token'>): Promise<boolean> {
    try {
      await this.table.client.send(
        new DeleteCommand({
          TableName: this.table.tableName,
          Key: { PK: workspacePk(lease.workspaceId), SK: leaseSk(lease.destinationId) },
          ConditionExpression: '#token = :token',
          ExpressionAttributeNames: { '#token': 'token' },
          ExpressionAttributeValues: { ':token': lease.token },
        }),
      );
      return true;
    } catch (error) {
      if (isConditionFailed(error)) return false;
      return mapDynamoError(error);
    }
  }

  /** The lease currently stored for a destination (live or expired), or `undefined`. */
  async getLease(workspaceId: string, destinationId: string): Promise<Lease | undefined> {
    const item = await this.getLeaseItem(workspaceId, destinationId);
    if (item === undefined) return undefined;
    return {
      workspaceId,
      destinationId,
      runId: String(item.runId),
      token: String(item.token),
      startedAt: String(item.startedAt),
      expiresAtMs: Number(item.expiresAtMs),
    };
  }

  /** Every cursor of the destination, one per dataset (an empty one where none is stored), consistent read. */
  async getCursors(workspaceId: string, destinationId: string): Promise<Map<Dataset, CursorState>> {
    const prefix = cursorSkPrefix(destinationId);
    const stored = new Map<string, Item>();
    let startKey: Item | undefined;
    do {
      const page = await withDynamoErrors(() =>
        this.table.client.send(
          new QueryCommand({
            TableName: this.table.tableName,
            KeyConditionExpression: 'PK = :pk AND begins_with(SK, :prefix)',
            ExpressionAttributeValues: { ':pk': workspacePk(workspaceId), ':prefix': prefix },
            ConsistentRead: true,
            ExclusiveStartKey: startKey,
          }),
        ),
      );
      for (const item of page.Items ?? []) stored.set(String(item.SK).slice(prefix.length), item);
      startKey = page.LastEvaluatedKey;
    } while (startKey !== undefined);
    const cursors = new Map<Dataset, CursorState>();
    for (const dataset of DATASETS) cursors.set(dataset, toCursor(dataset, stored.get(dataset)));
    return cursors;
  }

  /**
   * Stores the planned work of a run before anything is written, in one transaction fenced by the lease
   * and by each cursor's expected position. Returns false when the fence or a position no longer holds.
   */
  savePlanned(fence: CursorFence, writes: CursorWrite[], now: Date): Promise<boolean> {
    return this.writeCursors(
      fence,
      writes.map((write) => ({ ...write, next: undefined })),
      now,
    );
  }

  /**
   * Advances cursors (new position and remaining planned work) in one transaction fenced by the lease (or
   * by "no live lease", for the dispatcher) and by each cursor's expected old position, so of two
   * executions at most one moves a cursor. Returns false when the fence or an expected position fails.
   */
  advanceCursors(fence: CursorFence, writes: CursorWrite[], now: Date): Promise<boolean> {
    return this.writeCursors(fence, writes, now);
  }

  /** Writes a run record (`expiresAt` = startedAt + 14 days). Overwrites the same run's earlier record. */
  async putRun(run: RunRecord): Promise<void> {
    await withDynamoErrors(() =>
      this.table.client.send(
        new PutCommand({
          TableName: this.table.tableName,
          Item: {
            PK: runsPk(run.workspaceId, run.destinationId),
            SK: runSk(run.startedAt, run.id),
            ...run,
            expiresAt: runExpiresAt(run.startedAt),
          },
        }),
      ),
    );
  }

  /** Reads one run record, or `undefined`. */
  async getRun(
    workspaceId: string,
    destinationId: string,
    startedAt: string,
    runId: string,
  ): Promise<RunRecord | undefined> {
    const result = await withDynamoErrors(() =>
      this.table.client.send(
        new GetCommand({
          TableName: this.table.tableName,
          Key: { PK: runsPk(workspaceId, destinationId), SK: runSk(startedAt, runId) },
          ConsistentRead: true,
        }),
      ),
    );
    if (result.Item === undefined) return undefined;
    const { PK: _pk, SK: _sk, expiresAt: _expiresAt, ...run } = result.Item;
    return run as RunRecord;
  }

  /**
   * Sets the final fields of a run record. Creates it when it is missing (a run that failed before its
   * record was written), so every execution leaves a record.
   */
  async finishRun(
    run: Pick<RunRecord, 'workspaceId' | 'destinationId' | 'id' | 'startedAt' | 'isManual'>,
    outcome: RunOutcome,
  ): Promise<void> {
    await withDynamoErrors(() =>
      this.table.client.send(
        new UpdateCommand({
          TableName: this.table.tableName,
          Key: { PK: runsPk(run.workspaceId, run.destinationId), SK: runSk(run.startedAt, run.id) },
          UpdateExpression:
            'SET id = :id, destinationId = :destinationId, workspaceId = :workspaceId, startedAt = :startedAt, ' +
            'isManual = if_not_exists(isManual, :isManual), #status = :status, rowCount = :rowCount, ' +
            'fileCount = :fileCount, byteCount = :byteCount, stats = :stats, #error = :error, ' +
            'finishedAt = :finishedAt, expiresAt = :expiresAt',
          ExpressionAttributeNames: { '#status': 'status', '#error': 'error' },
          ExpressionAttributeValues: {
            ':id': run.id,
            ':destinationId': run.destinationId,
            ':workspaceId': run.workspaceId,
            ':startedAt': run.startedAt,
            ':isManual': run.isManual,
            ':status': outcome.status,
            ':rowCount': outcome.rowCount,
            ':fileCount': outcome.fileCount,
            ':byteCount': outcome.byteCount,
            ':stats': outcome.stats,
            ':error': outcome.error,
            ':finishedAt': outcome.finishedAt,
            ':expiresAt': runExpiresAt(run.startedAt),
          },
        }),
      ),
    );
  }

  /**
   * Updates the run-state fields of the destination item, keeping the sparse due index consistent: when
   * `nextRunAt` changes, `dueKey`/`dueAt` are set while the destination is enabled and removed otherwise
   * (the enabled case is tried first, conditional on `isEnabled`, then the paused one). Never creates the
   * item. Returns false when the destination does not exist (or its `configVersion` moved on, if given).
   */
  async updateRunState(
    workspaceId: string,
    destinationId: string,
    changes: RunStateChanges,
    now: Date,
  ): Promise<boolean> {
    const names: Record<string, string> = { '#updatedAt': 'updatedAt' };
    const values: Record<string, unknown> = { ':updatedAt': now.toISOString() };
    const sets: string[] = ['#updatedAt = :updatedAt'];
    const adds: string[] = [];
    const conditions: string[] = ['attribute_exists(PK)'];
    const set = (field: string, value: unknown): void => {
      names[`#${field}`] = field;
      values[`:${field}`] = value;
      sets.push(`#${field} = :${field}`);
    };
    if (changes.status !== undefined) set('status', changes.status);
    if (changes.lastRunAt !== undefined) set('lastRunAt', changes.lastRunAt);
    if (changes.lastSuccessAt !== undefined) set('lastSuccessAt', changes.lastSuccessAt);
    if (changes.lastError !== undefined) set('lastError', changes.lastError);
    if (changes.lastErrorAt !== undefined) set('lastErrorAt', changes.lastErrorAt);
    if (changes.manualRunQueued !== undefined) set('manualRunQueued', changes.manualRunQueued);
    if (typeof changes.consecutiveFailures === 'number')
      set('consecutiveFailures', changes.consecutiveFailures);
    if (changes.consecutiveFailures === 'increment') {
      names['#consecutiveFailures'] = 'consecutiveFailures';
      values[':zero'] = 0;
      values[':one'] = 1;
      sets.push('#consecutiveFailures = if_not_exists(#consecutiveFailures, :zero) + :one');
    }
    if (changes.addRowsExported !== undefined && changes.addRowsExported !== 0) {
      names['#totalRowsExported'] = 'totalRowsExported';
      values[':addRows'] = changes.addRowsExported;
      adds.push('#totalRowsExported :addRows');
    }
    if (changes.expectedConfigVersion !== undefined) {
      names['#configVersion'] = 'configVersion';
      values[':configVersion'] = changes.expectedConfigVersion;
      conditions.push('#configVersion = :configVersion');
    }
    if (changes.expectedDueAt !== undefined) {
      names['#dueAt'] = 'dueAt';
      values[':expectedDueAt'] = changes.expectedDueAt;
      conditions.push('#dueAt = :expectedDueAt');
    }
    if (changes.nextRunAt !== undefined) set('nextRunAt', changes.nextRunAt);

    const attempts: { extraSets: string[]; remove: boolean; condition: string; extraValues: Item }[] = [];
    if (changes.nextRunAt === undefined) {
      attempts.push({ extraSets: [], remove: false, condition: '', extraValues: {} });
    } else {
      names['#isEnabled'] = 'isEnabled';
      if (changes.nextRunAt !== null) {
        const due = dueIndexUpdate(workspaceId, destinationId, {
          isEnabled: true,
          nextRunAt: changes.nextRunAt,
        });
        attempts.push({
          extraSets: due.set,
          remove: false,
          condition: '#isEnabled = :true',
          extraValues: { ':true': true, ...due.values },
        });
      }
      attempts.push({
        extraSets: [],
        remove: true,
        condition: changes.nextRunAt === null ? '' : '#isEnabled <> :true',
        extraValues: changes.nextRunAt === null ? {} : { ':true': true },
      });
    }
    const noDue = dueIndexUpdate(workspaceId, destinationId, { isEnabled: false, nextRunAt: null });
    for (let round = 0; round < 3; round++) {
      for (const attempt of attempts) {
        const allConditions = attempt.condition === '' ? conditions : [...conditions, attempt.condition];
        const expression =
          `SET ${[...sets, ...attempt.extraSets].join(', ')}` +
          (adds.length > 0 ? ` ADD ${adds.join(', ')}` : '') +
          (attempt.remove ? ` REMOVE ${noDue.remove.join(', ')}` : '');
        const used = new Set(`${expression} ${allConditions.join(' ')}`.match(/[#:]\w+/g) ?? []);
        const usedNames = Object.fromEntries(Object.entries(names).filter(([name]) => used.has(name)));
        const usedValues = Object.fromEntries(
          Object.entries({ ...values, ...attempt.extraValues }).filter(([name]) => used.has(name)),
        );
        try {
          await this.table.client.send(
            new UpdateCommand({
              TableName: this.table.tableName,
              Key: { PK: workspacePk(workspaceId), SK: destinationSk(destinationId) },
              UpdateExpression: expression,
              ConditionExpression: allConditions.join(' AND '),
              ExpressionAttributeNames: usedNames,
              ExpressionAttributeValues: usedValues,
            }),
          );
          return true;
        } catch (error) {
          if (!isConditionFailed(error)) return mapDynamoError(error);
        }
      }
      // Every variant failed: the destination is gone, its configVersion moved, or isEnabled flipped
      // between the variants. Check which before trying again.
      const current = await this.getDestinationState(workspaceId, destinationId);
      if (current === undefined) return false;
      if (
        changes.expectedConfigVersion !== undefined &&
        current.configVersion !== changes.expectedConfigVersion
      ) {
        return false;
      }
      if (changes.expectedDueAt !== undefined && current.dueAt !== changes.expectedDueAt) return false;
    }
    return false;
  }

  /** See {@link DueIndex.queryDue}. */
  queryDue(now: Date): Promise<DueEntry[]> {
    return this.dueIndex.queryDue(now);
  }

  /** See {@link DueIndex.markDispatched}. */
  markDispatched(entry: DueEntry, untilIso: string): Promise<boolean> {
    return this.dueIndex.markDispatched(entry, untilIso);
  }

  private async getLeaseItem(workspaceId: string, destinationId: string): Promise<Item | undefined> {
    const result = await withDynamoErrors(() =>
      this.table.client.send(
        new GetCommand({
          TableName: this.table.tableName,
          Key: { PK: workspacePk(workspaceId), SK: leaseSk(destinationId) },
          ConsistentRead: true,
        }),
      ),
    );
    return result.Item;
  }

  private async getDestinationState(
    workspaceId: string,
    destinationId: string,
  ): Promise<{ configVersion: unknown; isEnabled: unknown; dueAt: unknown } | undefined> {
    const result = await withDynamoErrors(() =>
      this.table.client.send(
        new GetCommand({
          TableName: this.table.tableName,
          Key: { PK: workspacePk(workspaceId), SK: destinationSk(destinationId) },
          ProjectionExpression: 'configVersion, isEnabled, dueAt',
          ConsistentRead: true,
        }),
      ),
    );
    return result.Item as { configVersion: unknown; isEnabled: unknown; dueAt: unknown } | undefined;
  }

  private async writeCursors(fence: CursorFence, writes: CursorWrite[], now: Date): Promise<boolean> {
    const workspaceId = 'lease' in fence ? fence.lease.workspaceId : fence.workspaceId;
    const destinationId = 'lease' in fence ? fence.lease.destinationId : fence.destinationId;
    if (writes.length === 0) {
      // Nothing to write: the fence alone decides, from a consistent read of the lease.
      const item = await this.getLeaseItem(workspaceId, destinationId);
      if ('lease' in fence) return item !== undefined && item.token === fence.lease.token;
      return item === undefined || Number(item.expiresAtMs) < fence.noLiveLeaseAt;
    }
    const pk = workspacePk(workspaceId);
    const fenceItem: TransactItem =
      'lease' in fence
        ? {
            ConditionCheck: {
              TableName: this.table.tableName,
              Key: { PK: pk, SK: leaseSk(destinationId) },
              ConditionExpression: '#token = :token',
              ExpressionAttributeNames: { '#token': 'token' },
              ExpressionAttributeValues: { ':token': fence.lease.token },
            },
          }
        : {
            ConditionCheck: {
              TableName: this.table.tableName,
              Key: { PK: pk, SK: leaseSk(destinationId) },
              ConditionExpression: 'attribute_not_exists(PK) OR expiresAtMs < :now',
              ExpressionAttributeValues: { ':now': fence.noLiveLeaseAt },
            },
          };
    const items: TransactItem[] = [fenceItem];
    for (const write of writes) items.push(this.cursorUpdate(pk, destinationId, write, now));
    for (let attempt = 0; ; attempt++) {
      try {
        await this.table.client.send(new TransactWriteCommand({ TransactItems: items }));
        return true;
      } catch (error) {
        if (isTransactionConditionFailed(error)) return false;
        // Another transaction on the same items is in flight: retry shortly, then its outcome decides.
        if (isTransactionConflict(error) && attempt < MAX_CONFLICT_RETRIES) {
          await sleep(20 * 2 ** attempt * (0.5 + Math.random()));
          continue;
        }
        return mapDynamoError(error);
      }
    }
  }

  private cursorUpdate(pk: string, destinationId: string, write: CursorWrite, now: Date): TransactItem {
    const names: Record<string, string> = { '#dataset': 'dataset', '#updatedAt': 'updatedAt' };
    const values: Record<string, unknown> = { ':dataset': write.dataset, ':updatedAt': now.toISOString() };
    const sets = ['#dataset = :dataset', '#updatedAt = :updatedAt'];
    const removes: string[] = [];
    const conditions: string[] = [];
    for (const field of ['exportedThroughMs', 'snapshotDate'] as const) {
      names[`#${field}`] = field;
      const expected = write.expected[field];
      if (expected === undefined) conditions.push(`attribute_not_exists(#${field})`);
      else {
        values[`:old_${field}`] = expected;
        conditions.push(`#${field} = :old_${field}`);
      }
      const next = write.next?.[field];
      if (next !== undefined) {
        values[`:new_${field}`] = next;
        sets.push(`#${field} = :new_${field}`);
      }
    }
    const planned: Item[] = [];
    let touchesPlanned = false;
    if (write.plannedWindows !== undefined) {
      touchesPlanned = true;
      for (const window of write.plannedWindows) {
        planned.push({ fromMs: window.fromMs, toMs: window.toMs, runId: window.runId });
      }
    }
    if (write.plannedSnapshot !== undefined) {
      touchesPlanned = true;
      if (write.plannedSnapshot !== null) {
        planned.push({ date: write.plannedSnapshot.date, runId: write.plannedSnapshot.runId });
      }
    }
    if (touchesPlanned) {
      names['#planned'] = 'planned';
      if (planned.length > 0) {
        values[':planned'] = planned;
        sets.push('#planned = :planned');
      } else {
        removes.push('#planned');
      }
    }
    return {
      Update: {
        TableName: this.table.tableName,
        Key: { PK: pk, SK: cursorSk(destinationId, write.dataset) },
        UpdateExpression: `SET ${sets.join(', ')}${removes.length > 0 ? ` REMOVE ${removes.join(', ')}` : ''}`,
        ConditionExpression: conditions.join(' AND '),
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
      },
    };
  }
}
