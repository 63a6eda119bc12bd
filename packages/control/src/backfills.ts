import { GetCommand, paginateQuery, type QueryCommandInput, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { BACKFILL_STATUSES, type Backfill, type BackfillStatus, type EventDataset } from '@sluice/core';
import {
  type ControlTable,
  type ControlTableOptions,
  isConditionFailed,
  mapDynamoError,
  resolveControlTable,
  withDynamoErrors,
} from './client.js';
import { type ProgressSaveOutcome, progressKey, toProgress, type WindowProgress } from './cursors.js';
import { DUE_INDEX_NAME } from './due-index.js';
import { destinationSk, isKeySafeId, workspacePk } from './items.js';
import { type TransactItem, transact } from './transactions.js';

/**
 * Backfills in the control table (docs/internals.md, "Backfills"), all in the workspace's partition under
 * the destination, so deleting the destination deletes them:
 * - `DEST#<id>#BACKFILL#<backfillId>`: the backfill (ids sort by creation time, so a reversed Query lists
 *   newest first), with its token while a run works on it, and the due index keys while it is active:
 *   `dueKey = BACKFILL#DUE`, `dueAt = <ISO>#<workspaceId>#<destinationId>#<backfillId>`;
 * - `DEST#<id>#BACKFILL_SLOT`: the one running backfill of the destination: which one, the run's token and
 *   until when (a run that died is taken over once it expires);
 * - `DEST#<id>#BACKFILL_FULL`: when the last full-history backfill was created (one per 30 days);
 * - `DEST#<id>#BFPROGRESS#<backfillId>#<dataset>#<window>`: window progress, the regular export's shape.
 * The backfill's per-dataset counts (rows, files, bytes) move with each file, and its `reached` (per dataset,
 * span start to the end of the span's last finished window) with each finished window, in the same fenced
 * transactions as the window progress: the API shows progress while a run works, not only at its Commit.
 * The regular export's lease and cursors are never touched: a backfill runs beside it.
 */

type Item = Record<string, unknown>;

/** The due index partition of active backfills (one: backfills are few). */
export const BACKFILL_DUE_KEY = 'BACKFILL#DUE';

function backfillSkPrefix(destinationId: string): string {
  return `${destinationSk(destinationId)}#BACKFILL#`;
}

/** Sort key of a backfill. */
export function backfillSk(destinationId: string, backfillId: string): string {
  return `${backfillSkPrefix(destinationId)}${backfillId}`;
}

function slotSk(destinationId: string): string {
  return `${destinationSk(destinationId)}#BACKFILL_SLOT`;
}

function fullHistorySk(destinationId: string): string {
  return `${destinationSk(destinationId)}#BACKFILL_FULL`;
}

function progressPrefix(destinationId: string, backfillId: string): string {
  return `${destinationSk(destinationId)}#BFPROGRESS#${backfillId}#`;
}

/** `<ISO>#<workspaceId>#<destinationId>#<backfillId>`: a backfill's due index sort key. */
function backfillDueAt(iso: string, backfill: { workspaceId: string; destinationId: string; id: string }) {
  return `${iso}#${backfill.workspaceId}#${backfill.destinationId}#${backfill.id}`;
}

/** A backfill found due on the index. */
export interface DueBackfill {
  workspaceId: string;
  destinationId: string;
  backfillId: string;
  /** The index sort key as read, for {@link BackfillStore.markDispatched}. */
  dueAt: string;
}

/** The run that works on a backfill: its slot token fences every write. */
export interface BackfillFence {
  workspaceId: string;
  destinationId: string;
  backfillId: string;
  token: string;
}

/** The slot of a destination: the running backfill and the run working on it. */
export interface BackfillSlot {
  backfillId: string;
  runId: string;
  token: string;
  expiresAtMs: number;
}

/** What a commit writes on the backfill. */
export interface BackfillCommit {
  doneThroughMs: Backfill['doneThroughMs'];
  /** The writers' `reached` still beyond `doneThroughMs` (the rest is covered by it). */
  reached: Backfill['reached'];
  status: 'running' | 'succeeded' | 'failed';
  attempts: number;
  error: string | null;
  /** When the backfill is due again (running), or null to leave the due index (final). */
  dueAt: string | null;
}

/** A writer's span of a backfill dataset finished every window from `spanFromMs` through `throughMs`. */
export interface BackfillReach {
  dataset: EventDataset;
  spanFromMs: number;
  throughMs: number;
}

/** The update of a backfill's `reached` by a {@link BackfillReach}. */
function reachUpdate(reach: BackfillReach) {
  return {
    set: '#reached.#reachDataset.#reachSpan = :reachThrough',
    names: { '#reached': 'reached', '#reachDataset': reach.dataset, '#reachSpan': String(reach.spanFromMs) },
    values: { ':reachThrough': reach.throughMs },
  };
}

/** The outcome of {@link BackfillStore.retry}. */
export type BackfillRetryOutcome =
  | { outcome: 'retried'; backfill: Backfill }
  | { outcome: 'not_failed'; backfill: Backfill }
  | { outcome: 'not_found' }
  | { outcome: 'full_history_recent' };

/** The outcome of {@link BackfillStore.create}. */
export type BackfillCreateOutcome = 'created' | 'destination_missing' | 'full_history_recent';

function toBackfill(item: Item): Backfill {
  const status = BACKFILL_STATUSES.includes(item.status as BackfillStatus)
    ? (item.status as BackfillStatus)
    : 'failed';
  const range = (item.range ?? {}) as Backfill['range'];
  return {
    id: String(item.id),
    workspaceId: String(item.workspaceId),
    destinationId: String(item.destinationId),
    status,
    fullHistory: item.fullHistory === true,
    datasets: Array.isArray(item.datasets) ? (item.datasets as EventDataset[]) : [],
    from: String(item.from),
    to: String(item.to),
    range: { fromMs: Number(range.fromMs), toMs: Number(range.toMs), stepMs: Number(range.stepMs) },
    doneThroughMs: (item.doneThroughMs ?? {}) as Backfill['doneThroughMs'],
    reached: (item.reached ?? {}) as Backfill['reached'],
    progress: (item.progress ?? {}) as Backfill['progress'],
    attempts: typeof item.attempts === 'number' ? item.attempts : 0,
    error: typeof item.error === 'string' ? item.error : null,
    createdAt: String(item.createdAt),
    startedAt: typeof item.startedAt === 'string' ? item.startedAt : null,
    finishedAt: typeof item.finishedAt === 'string' ? item.finishedAt : null,
    updatedAt: String(item.updatedAt),
  };
}

/** Backfill progress items are kept at most this long (a backfill runs for days at most). */
const PROGRESS_TTL_SECONDS = 35 * 86_400;

/** See the module comment. Takes `{ client?, tableName? }` like every control store. */
export class BackfillStore {
  private readonly table: ControlTable;

  constructor(options: ControlTableOptions) {
    this.table = resolveControlTable(options);
  }

  /**
   * Stores a new backfill (queued, due now), only while the destination exists. A full-history backfill
   * also stamps the destination's last full-history time, only if the one stored is older than
   * `fullHistorySince`: at most one per period, even for two requests at once.
   */
  async create(
    backfill: Backfill,
    options: { fullHistorySince?: string } = {},
  ): Promise<BackfillCreateOutcome> {
    const pk = workspacePk(backfill.workspaceId);
    const items: TransactItem[] = [
      {
        ConditionCheck: {
          TableName: this.table.tableName,
          Key: { PK: pk, SK: destinationSk(backfill.destinationId) },
          ConditionExpression: 'attribute_exists(PK)',
        },
      },
      {
        Put: {
          TableName: this.table.tableName,
          Item: {
            PK: pk,
            SK: backfillSk(backfill.destinationId, backfill.id),
            ...backfill,
            dueKey: BACKFILL_DUE_KEY,
            dueAt: backfillDueAt(backfill.createdAt, backfill),
          },
          ConditionExpression: 'attribute_not_exists(PK)',
        },
      },
    ];
    if (backfill.fullHistory) {
      items.push(
        await this.fullHistoryClaim(
          backfill,
          backfill.createdAt,
          options.fullHistorySince ?? backfill.createdAt,
        ),
      );
    }
    const outcome = await transact(this.table, items);
    if (outcome === true) return 'created';
    if (outcome === 0) return 'destination_missing';
    if (outcome === 2) return 'full_history_recent';
    throw new Error(`backfill id ${backfill.id} already exists`);
  }

  /**
   * The Put that takes a destination's full-history allowance for `backfill` (stamp `lastAt = atIso` and
   * the backfill's id), only while the allowance is free: no full history stamped since `sinceIso`, or the
   * one stamped is this backfill, or it failed or was cancelled (read here; the Put is then conditional on
   * the stamp being the one read, so a retry of that one at the same time takes it once). A failed or
   * cancelled full history does not use up the allowance. Stamps written before they named their backfill
   * count until they are 30 days old.
   */
  private async fullHistoryClaim(
    backfill: Pick<Backfill, 'workspaceId' | 'destinationId' | 'id'>,
    atIso: string,
    sinceIso: string,
  ): Promise<TransactItem> {
    const pk = workspacePk(backfill.workspaceId);
    const key = { PK: pk, SK: fullHistorySk(backfill.destinationId) };
    const stamp = await withDynamoErrors(() =>
      this.table.client.send(
        new GetCommand({ TableName: this.table.tableName, Key: key, ConsistentRead: true }),
      ),
    );
    const stampedId = stamp.Item?.backfillId;
    const stampedAt = stamp.Item?.lastAt;
    let freed = false;
    if (typeof stampedId === 'string' && typeof stampedAt === 'string' && stampedId !== backfill.id) {
      const stamped = await this.get(backfill.workspaceId, backfill.destinationId, stampedId);
      freed = stamped === undefined || stamped.status === 'failed' || stamped.status === 'cancelled';
    }
    const values: Record<string, unknown> = { ':since': sinceIso, ':self': backfill.id };
    let condition = 'attribute_not_exists(PK) OR lastAt < :since OR backfillId = :self';
    if (freed) {
      condition += ' OR (backfillId = :freed AND lastAt = :stampedAt)';
      values[':freed'] = stampedId;
      values[':stampedAt'] = stampedAt;
    }
    return {
      Put: {
        TableName: this.table.tableName,
        Item: { ...key, lastAt: atIso, backfillId: backfill.id },
        ConditionExpression: condition,
        ExpressionAttributeValues: values,
      },
    };
  }

  /**
   * Retries a failed backfill from where it stopped: `queued` again and due now, its failed attempts
   * reset, its positions, per-dataset counts and window progress kept, so the next run writes only the
   * windows not yet done (a window begun continues from its next file). A full history takes the
   * allowance again (see {@link fullHistoryClaim}). Outcomes: `retried` (with the backfill as stored now),
   * `not_found`, `not_failed` (with the backfill: only a failed one is retried), `full_history_recent`
   * (another full history holds the allowance).
   */
  async retry(
    workspaceId: string,
    destinationId: string,
    backfillId: string,
    now: Date,
    options: { fullHistorySince?: string } = {},
  ): Promise<BackfillRetryOutcome> {
    const backfill = await this.get(workspaceId, destinationId, backfillId);
    if (backfill === undefined) return { outcome: 'not_found' };
    if (backfill.status !== 'failed') return { outcome: 'not_failed', backfill };
    const iso = now.toISOString();
    const items: TransactItem[] = [
      {
        Update: {
          TableName: this.table.tableName,
          Key: { PK: workspacePk(workspaceId), SK: backfillSk(destinationId, backfillId) },
          UpdateExpression:
            'SET #status = :queued, attempts = :zero, #error = :null, updatedAt = :now, dueKey = :dueKey, ' +
            'dueAt = :dueAt REMOVE finishedAt',
          ConditionExpression: '#status = :failed',
          ExpressionAttributeNames: { '#status': 'status', '#error': 'error' },
          ExpressionAttributeValues: {
            ':queued': 'queued',
            ':failed': 'failed',
            ':zero': 0,
            ':null': null,
            ':now': iso,
            ':dueKey': BACKFILL_DUE_KEY,
            ':dueAt': backfillDueAt(iso, backfill),
          },
        },
      },
    ];
    if (backfill.fullHistory) {
      items.push(await this.fullHistoryClaim(backfill, iso, options.fullHistorySince ?? iso));
    }
    const outcome = await transact(this.table, items);
    if (outcome === 1) return { outcome: 'full_history_recent' };
    const after = await this.get(workspaceId, destinationId, backfillId);
    if (after === undefined) return { outcome: 'not_found' };
    // Not ours (outcome 0): retried or cancelled by another request meanwhile.
    return outcome === true
      ? { outcome: 'retried', backfill: after }
      : { outcome: 'not_failed', backfill: after };
  }

  /** One backfill, or undefined. Consistent read. */
  async get(workspaceId: string, destinationId: string, backfillId: string): Promise<Backfill | undefined> {
    if (![workspaceId, destinationId, backfillId].every(isKeySafeId)) return undefined;
    const result = await withDynamoErrors(() =>
      this.table.client.send(
        new GetCommand({
          TableName: this.table.tableName,
          Key: { PK: workspacePk(workspaceId), SK: backfillSk(destinationId, backfillId) },
          ConsistentRead: true,
        }),
      ),
    );
    return result.Item === undefined ? undefined : toBackfill(result.Item);
  }

  /** At most `limit` backfills of a destination, newest first, from just below `after` (an id) when given. */
  async list(
    workspaceId: string,
    destinationId: string,
    options: { limit: number; after?: string },
  ): Promise<Backfill[]> {
    if (!isKeySafeId(workspaceId) || !isKeySafeId(destinationId)) return [];
    const prefix = backfillSkPrefix(destinationId);
    const upper = options.after !== undefined ? backfillSk(destinationId, options.after) : `${prefix}\uffff`;
    const found: Backfill[] = [];
    const pages = paginateQuery(
      { client: this.table.client, pageSize: options.limit + 1 },
      {
        TableName: this.table.tableName,
        KeyConditionExpression: 'PK = :pk AND SK BETWEEN :lower AND :upper',
        ExpressionAttributeValues: { ':pk': workspacePk(workspaceId), ':lower': prefix, ':upper': upper },
        ScanIndexForward: false,
      },
    );
    try {
      for await (const page of pages) {
        for (const item of page.Items ?? []) {
          if (item.SK === upper) continue;
          found.push(toBackfill(item));
          if (found.length === options.limit) return found;
        }
      }
    } catch (error) {
      mapDynamoError(error);
    }
    return found;
  }

  /** The active (queued or running) backfills of a destination, oldest first. */
  async listActive(workspaceId: string, destinationId: string): Promise<Backfill[]> {
    const items = await this.query({
      TableName: this.table.tableName,
      KeyConditionExpression: 'PK = :pk AND begins_with(SK, :prefix)',
      FilterExpression: '#status IN (:queued, :running)',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: {
        ':pk': workspacePk(workspaceId),
        ':prefix': backfillSkPrefix(destinationId),
        ':queued': 'queued',
        ':running': 'running',
      },
      ConsistentRead: true,
    });
    return items.map(toBackfill);
  }

  /**
   * Cancels an active backfill: `cancelled`, off the due index. A run working on it stops before its next
   * file (its progress saves require `running`). Returns the backfill as it is after the call, and whether
   * this call cancelled it; undefined when it does not exist.
   */
  async cancel(
    workspaceId: string,
    destinationId: string,
    backfillId: string,
    now: Date,
  ): Promise<{ cancelled: boolean; backfill: Backfill } | undefined> {
    if (![workspaceId, destinationId, backfillId].every(isKeySafeId)) return undefined;
    try {
      const result = await this.table.client.send(
        new UpdateCommand({
          TableName: this.table.tableName,
          Key: { PK: workspacePk(workspaceId), SK: backfillSk(destinationId, backfillId) },
          UpdateExpression:
            'SET #status = :cancelled, finishedAt = :now, updatedAt = :now REMOVE dueKey, dueAt',
          ConditionExpression: '#status IN (:queued, :running)',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: {
            ':cancelled': 'cancelled',
            ':now': now.toISOString(),
            ':queued': 'queued',
            ':running': 'running',
          },
          ReturnValues: 'ALL_NEW',
        }),
      );
      return { cancelled: true, backfill: toBackfill(result.Attributes ?? {}) };
    } catch (error) {
      if (!isConditionFailed(error)) return mapDynamoError(error);
      const backfill = await this.get(workspaceId, destinationId, backfillId);
      return backfill === undefined ? undefined : { cancelled: false, backfill };
    }
  }

  /** The destination's backfill slot, live or expired, or undefined. Consistent read. */
  async getSlot(workspaceId: string, destinationId: string): Promise<BackfillSlot | undefined> {
    const result = await withDynamoErrors(() =>
      this.table.client.send(
        new GetCommand({
          TableName: this.table.tableName,
          Key: { PK: workspacePk(workspaceId), SK: slotSk(destinationId) },
          ConsistentRead: true,
        }),
      ),
    );
    const item = result.Item;
    if (item === undefined) return undefined;
    return {
      backfillId: String(item.backfillId),
      runId: String(item.runId),
      token: String(item.token),
      expiresAtMs: Number(item.expiresAtMs),
    };
  }

  /**
   * Claims the destination's slot for `backfillId` in one transaction: the slot is free or expired, and the
   * backfill is still active (it becomes `running`, with the run's token). A retried claim of the same run
   * gets its slot back. Returns the slot, or undefined when another live run holds it or the backfill is no
   * longer active.
   */
  async claim(
    fence: Omit<BackfillFence, 'token'> & { datasets: readonly EventDataset[] },
    slot: BackfillSlot,
    now: Date,
  ): Promise<BackfillSlot | undefined> {
    const pk = workspacePk(fence.workspaceId);
    const outcome = await transact(this.table, [
      {
        Put: {
          TableName: this.table.tableName,
          Item: {
            PK: pk,
            SK: slotSk(fence.destinationId),
            ...slot,
            expiresAt: Math.floor(slot.expiresAtMs / 1000) + 86_400,
          },
          ConditionExpression: 'attribute_not_exists(PK) OR expiresAtMs < :now',
          ExpressionAttributeValues: { ':now': now.getTime() },
        },
      },
      {
        Update: {
          TableName: this.table.tableName,
          Key: { PK: pk, SK: backfillSk(fence.destinationId, fence.backfillId) },
          UpdateExpression:
            'SET #status = :running, #token = :token, startedAt = if_not_exists(startedAt, :now), updatedAt = :now, ' +
            '#reached = if_not_exists(#reached, :reached)',
          ConditionExpression: '#status IN (:queued, :running)',
          ExpressionAttributeNames: { '#status': 'status', '#token': 'token', '#reached': 'reached' },
          ExpressionAttributeValues: {
            ':running': 'running',
            ':queued': 'queued',
            ':token': slot.token,
            ':now': now.toISOString(),
            ':reached': Object.fromEntries(fence.datasets.map((dataset) => [dataset, {}])),
          },
        },
      },
    ]);
    if (outcome === true) return slot;
    if (outcome === 0) {
      const held = await this.getSlot(fence.workspaceId, fence.destinationId);
      if (held !== undefined && held.runId === slot.runId && held.backfillId === fence.backfillId)
        return held;
    }
    return undefined;
  }

  /** Every window progress of a backfill, keyed by `<dataset>#<window>`. Consistent read. */
  async getProgress(
    workspaceId: string,
    destinationId: string,
    backfillId: string,
  ): Promise<Map<string, WindowProgress>> {
    const items = await this.query({
      TableName: this.table.tableName,
      KeyConditionExpression: 'PK = :pk AND begins_with(SK, :prefix)',
      ExpressionAttributeValues: {
        ':pk': workspacePk(workspaceId),
        ':prefix': progressPrefix(destinationId, backfillId),
      },
      ConsistentRead: true,
    });
    const entries = new Map<string, WindowProgress>();
    for (const item of items) {
      const progress = toProgress(item);
      if (progress !== undefined) entries.set(progressKey(progress.dataset, progress.window), progress);
    }
    return entries;
  }

  /**
   * Saves a backfill writer's progress in one transaction, fenced like the regular export's: the backfill
   * is still `running` with this run's token (a cancel stops the writer here, before its next file), and
   * the destination is still enabled with `configVersion`. With `count`, the same transaction adds the
   * first entry's new files to the backfill's per-dataset progress, once (the entry's stored `nextFile`
   * must still be `previousNextFile`). With `reach`, the same transaction records how far the writer's span
   * is finished (its `reached`).
   */
  async saveProgress(
    fence: BackfillFence & { configVersion: number },
    progress: readonly WindowProgress[],
    now: Date,
    count?: { previousNextFile: number; rows: number; files: number; bytes: number },
    reach?: BackfillReach,
  ): Promise<ProgressSaveOutcome | 'cancelled'> {
    const pk = workspacePk(fence.workspaceId);
    const first = progress[0];
    const counted = count !== undefined && first !== undefined && count.files > 0;
    const reachSet = reach === undefined ? undefined : reachUpdate(reach);
    const backfillKey = { PK: pk, SK: backfillSk(fence.destinationId, fence.backfillId) };
    const fenceCondition = {
      ConditionExpression: '#status = :running AND #token = :token',
      ExpressionAttributeNames: { '#status': 'status', '#token': 'token' } as Record<string, string>,
      ExpressionAttributeValues: { ':running': 'running', ':token': fence.token } as Record<string, unknown>,
    };
    const sets: string[] = [];
    const names: Record<string, string> = { ...fenceCondition.ExpressionAttributeNames };
    const values: Record<string, unknown> = { ...fenceCondition.ExpressionAttributeValues };
    if (counted) {
      sets.push(
        '#progress.#dataset.#rows = #progress.#dataset.#rows + :rows',
        '#progress.#dataset.#files = #progress.#dataset.#files + :files',
        '#progress.#dataset.#bytes = #progress.#dataset.#bytes + :bytes',
      );
      Object.assign(names, {
        '#progress': 'progress',
        '#dataset': first.dataset,
        '#rows': 'rows',
        '#files': 'files',
        '#bytes': 'bytes',
      });
      Object.assign(values, { ':rows': count.rows, ':files': count.files, ':bytes': count.bytes });
    }
    if (reachSet !== undefined) {
      sets.push(reachSet.set);
      Object.assign(names, reachSet.names);
      Object.assign(values, reachSet.values);
    }
    const items: TransactItem[] = [
      sets.length > 0
        ? {
            Update: {
              TableName: this.table.tableName,
              Key: backfillKey,
              ConditionExpression: fenceCondition.ConditionExpression,
              UpdateExpression: `SET ${sets.join(', ')}, updatedAt = :now`,
              ExpressionAttributeNames: names,
              ExpressionAttributeValues: { ...values, ':now': now.toISOString() },
            },
          }
        : { ConditionCheck: { TableName: this.table.tableName, Key: backfillKey, ...fenceCondition } },
      {
        ConditionCheck: {
          TableName: this.table.tableName,
          Key: { PK: pk, SK: destinationSk(fence.destinationId) },
          ConditionExpression: 'configVersion = :configVersion AND isEnabled = :true',
          ExpressionAttributeValues: { ':configVersion': fence.configVersion, ':true': true },
        },
      },
      ...progress.map((entry, index) => ({
        Put: {
          TableName: this.table.tableName,
          Item: {
            PK: pk,
            SK: `${progressPrefix(fence.destinationId, fence.backfillId)}${entry.dataset}#${entry.window}`,
            ...entry,
            updatedAt: now.toISOString(),
            expiresAt: Math.floor(now.getTime() / 1000) + PROGRESS_TTL_SECONDS,
          },
          ...(index === 0 && counted
            ? {
                ConditionExpression:
                  'attribute_not_exists(PK) OR configVersion <> :configVersion OR nextFile = :previous',
                ExpressionAttributeValues: {
                  ':configVersion': entry.configVersion,
                  ':previous': count.previousNextFile,
                },
              }
            : {}),
        },
      })),
    ];
    const outcome = await transact(this.table, items);
    if (outcome === true) return 'saved';
    if (outcome === 1) return 'destination_changed';
    if (outcome === 2) return 'already_saved';
    const backfill = await this.get(fence.workspaceId, fence.destinationId, fence.backfillId);
    return backfill?.status === 'cancelled' ? 'cancelled' : 'lease_lost';
  }

  /**
   * Records how far a writer's span is finished (windows without rows save no progress, so a writer that
   * ends on them records it here), while the backfill is running with this token. False when it is not.
   */
  async saveReach(fence: BackfillFence, reach: BackfillReach, now: Date): Promise<boolean> {
    const update = reachUpdate(reach);
    try {
      await this.table.client.send(
        new UpdateCommand({
          TableName: this.table.tableName,
          Key: { PK: workspacePk(fence.workspaceId), SK: backfillSk(fence.destinationId, fence.backfillId) },
          UpdateExpression: `SET ${update.set}, updatedAt = :now`,
          ConditionExpression: '#status = :running AND #token = :token',
          ExpressionAttributeNames: { '#status': 'status', '#token': 'token', ...update.names },
          ExpressionAttributeValues: {
            ':running': 'running',
            ':token': fence.token,
            ':now': now.toISOString(),
            ...update.values,
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
   * Records what a run did on its backfill (positions, status, attempts, next due time) while its token
   * still holds, and releases the slot in the same transaction. Returns false when the token no longer
   * holds or the backfill is no longer running (cancelled meanwhile: the slot is then released alone).
   */
  async commit(fence: BackfillFence, commit: BackfillCommit, now: Date): Promise<boolean> {
    const pk = workspacePk(fence.workspaceId);
    const iso = now.toISOString();
    const final = commit.status !== 'running';
    const names: Record<string, string> = { '#status': 'status', '#token': 'token' };
    const values: Record<string, unknown> = {
      ':running': 'running',
      ':token': fence.token,
      ':status': commit.status,
      ':done': commit.doneThroughMs,
      ':reached': commit.reached,
      ':attempts': commit.attempts,
      ':error': commit.error,
      ':now': iso,
    };
    const sets = [
      '#status = :status',
      'doneThroughMs = :done',
      'reached = :reached',
      'attempts = :attempts',
      '#error = :error',
      'updatedAt = :now',
    ];
    names['#error'] = 'error';
    const removes = ['#token'];
    if (final) sets.push('finishedAt = :now');
    if (commit.dueAt === null) removes.push('dueKey', 'dueAt');
    else {
      sets.push('dueKey = :dueKey', 'dueAt = :dueAt');
      values[':dueKey'] = BACKFILL_DUE_KEY;
      values[':dueAt'] = backfillDueAt(commit.dueAt, {
        workspaceId: fence.workspaceId,
        destinationId: fence.destinationId,
        id: fence.backfillId,
      });
    }
    const outcome = await transact(this.table, [
      {
        Update: {
          TableName: this.table.tableName,
          Key: { PK: pk, SK: backfillSk(fence.destinationId, fence.backfillId) },
          UpdateExpression: `SET ${sets.join(', ')} REMOVE ${removes.join(', ')}`,
          ConditionExpression: '#status = :running AND #token = :token',
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
        },
      },
      this.releaseItem(fence),
    ]);
    if (outcome === true) return true;
    await this.release(fence);
    return false;
  }

  /** Releases the slot if this token still holds it (idempotent). */
  async release(fence: BackfillFence): Promise<void> {
    await transact(this.table, [this.releaseItem(fence)]);
  }

  /** Active backfills due at `now` (oldest first), at most `limit`: their due index entries only. */
  async queryDue(now: Date, limit: number): Promise<DueBackfill[]> {
    const items = await this.query(
      {
        TableName: this.table.tableName,
        IndexName: DUE_INDEX_NAME,
        KeyConditionExpression: 'dueKey = :key AND dueAt <= :upper',
        ProjectionExpression: 'dueAt',
        ExpressionAttributeValues: { ':key': BACKFILL_DUE_KEY, ':upper': `${now.toISOString()}#\uffff` },
      },
      limit,
    );
    const due: DueBackfill[] = [];
    for (const item of items) {
      const dueAt = String(item.dueAt);
      const [, workspaceId, destinationId, backfillId] = dueAt.split('#');
      if (workspaceId && destinationId && backfillId)
        due.push({ workspaceId, destinationId, backfillId, dueAt });
    }
    return due;
  }

  /**
   * Moves a due backfill's index entry to `untilIso`, conditional on the entry read: marks it dispatched
   * (one tick starts it) or sets it aside until it can start (`dueBackfillRuns` of the engine).
   */
  async markDispatched(entry: DueBackfill, untilIso: string): Promise<boolean> {
    try {
      await this.table.client.send(
        new UpdateCommand({
          TableName: this.table.tableName,
          Key: { PK: workspacePk(entry.workspaceId), SK: backfillSk(entry.destinationId, entry.backfillId) },
          UpdateExpression: 'SET dueAt = :next',
          ConditionExpression: 'dueAt = :expected',
          ExpressionAttributeValues: {
            ':expected': entry.dueAt,
            ':next': backfillDueAt(untilIso, {
              workspaceId: entry.workspaceId,
              destinationId: entry.destinationId,
              id: entry.backfillId,
            }),
          },
        }),
      );
      return true;
    } catch (error) {
      if (isConditionFailed(error)) return false;
      return mapDynamoError(error);
    }
  }

  private releaseItem(fence: BackfillFence): TransactItem {
    return {
      Delete: {
        TableName: this.table.tableName,
        Key: { PK: workspacePk(fence.workspaceId), SK: slotSk(fence.destinationId) },
        ConditionExpression: 'attribute_not_exists(PK) OR #token = :token',
        ExpressionAttributeNames: { '#token': 'token' },
        ExpressionAttributeValues: { ':token': fence.token },
      },
    };
  }

  private async query(input: QueryCommandInput, limit = Number.POSITIVE_INFINITY): Promise<Item[]> {
    const items: Item[] = [];
    try {
      for await (const page of paginateQuery({ client: this.table.client }, input)) {
        for (const item of page.Items ?? []) {
          items.push(item);
          if (items.length >= limit) return items;
        }
      }
    } catch (error) {
      mapDynamoError(error);
    }
    return items;
  }
}
