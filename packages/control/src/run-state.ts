import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { DestinationFailing, DestinationNotice, DestinationStatus } from '@sluice/core';
import {
  type ControlTable,
  type ControlTableOptions,
  isConditionFailed,
  mapDynamoError,
  resolveControlTable,
  withDynamoErrors,
} from './client.js';
import { dueIndexUpdate } from './due-index.js';
import { destinationSk, workspacePk } from './items.js';
import { type LeaseFence, leaseCondition } from './leases.js';
import { type TransactItem, transact } from './transactions.js';

/**
 * The run-state fields of the destination item (status, `nextRunAt` and its due index entry, last run,
 * last error, failures, rows exported): the part of a destination the engine owns. The API owns the rest
 * (`DestinationStore`).
 */

type Item = Record<string, unknown>;

/** What {@link RunStateStore.update} re-reads to tell a moved destination from a transient collision. */
interface DestinationStateRead {
  configVersion: unknown;
  isEnabled: unknown;
  dueAt: unknown;
  failing?: DestinationFailing | null;
  pendingNotice?: DestinationNotice | null;
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
  manualRunQueued?: boolean;
  /** The `schemaKeyOf` of the schema objects this run wrote. */
  schemaWritten?: string;
  /** Only apply when the destination's `configVersion` is still this. */
  expectedConfigVersion?: number;
  /** Only apply when the due index entry is still this one (as read by `queryDue`). */
  expectedDueAt?: string;
  /** The failing state to set (null: not failing). */
  failing?: DestinationFailing | null;
  /** The notice to keep until it is published (null: none). */
  pendingNotice?: DestinationNotice | null;
  /**
   * With a new `pendingNotice`: the writer publishes it and holds it until then (epoch ms), so no other
   * outcome publishes it at the same time (see {@link RunStateStore.claimPendingNotice}).
   */
  pendingNoticeClaimedUntilMs?: number;
  /**
   * Only apply when the failing state and the pending notice are still these (as read): the write that
   * moves the failing state is the one that decides its notice, so each transition is announced once.
   */
  expectedHealth?: DestinationHealthRead;
}

/** The failing state and pending notice as read, for {@link RunStateChanges.expectedHealth}. */
export interface DestinationHealthRead {
  failingSince: string | null;
  pendingNoticeId: string | null;
}

/** The {@link DestinationHealthRead} of a destination item (absent attributes read as null). */
export function healthReadOf(item: {
  failing?: DestinationFailing | null;
  pendingNotice?: DestinationNotice | null;
}): DestinationHealthRead {
  return { failingSince: item.failing?.since ?? null, pendingNoticeId: item.pendingNotice?.id ?? null };
}

/** True when two reads of the failing state and pending notice are the same. */
export function sameHealthRead(a: DestinationHealthRead, b: DestinationHealthRead): boolean {
  return a.failingSince === b.failingSince && a.pendingNoticeId === b.pendingNoticeId;
}

/** Run state of destinations. Takes `{ client?, tableName? }` like every control store. */
export class RunStateStore {
  private readonly table: ControlTable;

  constructor(options: ControlTableOptions) {
    this.table = resolveControlTable(options);
  }

  /**
   * Updates the run-state fields of the destination item, keeping the sparse due index consistent: when
   * `nextRunAt` changes, `dueKey`/`dueAt` are set while the destination is enabled and removed otherwise
   * (the enabled case is tried first, conditional on `isEnabled`, then the paused one). Never creates the
   * item. With a `fence`, applies only while that lease holds (and with `releaseLease`, releases it in the
   * same transaction). Returns false when the destination does not
   * exist (or its `configVersion` or due entry moved on, if given), or the fence failed.
   */
  async update(
    workspaceId: string,
    destinationId: string,
    changes: RunStateChanges,
    now: Date,
    fence?: LeaseFence,
    options: { releaseLease?: boolean } = {},
  ): Promise<boolean> {
    const names: Record<string, string> = { '#updatedAt': 'updatedAt' };
    const values: Record<string, unknown> = { ':updatedAt': now.toISOString() };
    const sets: string[] = ['#updatedAt = :updatedAt'];
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
    if (changes.schemaWritten !== undefined) set('schemaWritten', changes.schemaWritten);
    if (typeof changes.consecutiveFailures === 'number')
      set('consecutiveFailures', changes.consecutiveFailures);
    if (changes.consecutiveFailures === 'increment') {
      names['#consecutiveFailures'] = 'consecutiveFailures';
      values[':zero'] = 0;
      values[':one'] = 1;
      sets.push('#consecutiveFailures = if_not_exists(#consecutiveFailures, :zero) + :one');
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
    if (changes.failing !== undefined) set('failing', changes.failing);
    if (changes.pendingNotice !== undefined) set('pendingNotice', changes.pendingNotice);
    if (changes.pendingNoticeClaimedUntilMs !== undefined) {
      set('pendingNoticeClaimedUntil', changes.pendingNoticeClaimedUntilMs);
    }
    if (changes.expectedHealth !== undefined) {
      const { failingSince, pendingNoticeId } = changes.expectedHealth;
      names['#failing'] = 'failing';
      names['#pendingNotice'] = 'pendingNotice';
      names['#since'] = 'since';
      names['#id'] = 'id';
      values[':null'] = null;
      if (failingSince === null) {
        conditions.push('(attribute_not_exists(#failing) OR #failing = :null)');
      } else {
        values[':expectedFailingSince'] = failingSince;
        conditions.push('#failing.#since = :expectedFailingSince');
      }
      if (pendingNoticeId === null) {
        conditions.push('(attribute_not_exists(#pendingNotice) OR #pendingNotice = :null)');
      } else {
        values[':expectedNoticeId'] = pendingNoticeId;
        conditions.push('#pendingNotice.#id = :expectedNoticeId');
      }
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
          (attempt.remove ? ` REMOVE ${noDue.remove.join(', ')}` : '');
        const used = new Set(`${expression} ${allConditions.join(' ')}`.match(/[#:]\w+/g) ?? []);
        const usedNames = Object.fromEntries(Object.entries(names).filter(([name]) => used.has(name)));
        const usedValues = Object.fromEntries(
          Object.entries({ ...values, ...attempt.extraValues }).filter(([name]) => used.has(name)),
        );
        const update = {
          TableName: this.table.tableName,
          Key: { PK: workspacePk(workspaceId), SK: destinationSk(destinationId) },
          UpdateExpression: expression,
          ConditionExpression: allConditions.join(' AND '),
          ExpressionAttributeNames: usedNames,
          ExpressionAttributeValues: usedValues,
        };
        if (fence !== undefined) {
          // Fenced: the update applies only while the run still holds its lease (index 0 failing).
          const outcome = await transact(this.table, [
            leaseCondition(this.table.tableName, fence, { release: options.releaseLease }),
            { Update: update },
          ]);
          if (outcome === true) return true;
          if (outcome === 0) return false;
          continue;
        }
        try {
          await this.table.client.send(new UpdateCommand(update));
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
      if (
        changes.expectedHealth !== undefined &&
        !sameHealthRead(healthReadOf(current), changes.expectedHealth)
      ) {
        return false;
      }
    }
    return false;
  }

  /**
   * The transaction item adding a run's committed rows to the destination's `totalRowsExported`. Commit
   * writes it in the transaction that finishes the run record (conditional on the record still running),
   * so a retried Commit adds a run's rows exactly once.
   */
  addRowsItem(workspaceId: string, destinationId: string, rows: number): TransactItem {
    return {
      Update: {
        TableName: this.table.tableName,
        Key: { PK: workspacePk(workspaceId), SK: destinationSk(destinationId) },
        UpdateExpression: 'ADD #totalRowsExported :rows',
        ConditionExpression: 'attribute_exists(PK)',
        ExpressionAttributeNames: { '#totalRowsExported': 'totalRowsExported' },
        ExpressionAttributeValues: { ':rows': rows },
      },
    };
  }

  /**
   * Takes the pending notice `noticeId` to publish it, until `untilMs`: only while nobody else holds it
   * (the writer that recorded it holds it for a while; a holder that failed to publish lets it lapse).
   * Returns false when it is not pending or held by another.
   */
  async claimPendingNotice(
    workspaceId: string,
    destinationId: string,
    noticeId: string,
    nowMs: number,
    untilMs: number,
  ): Promise<boolean> {
    try {
      await this.table.client.send(
        new UpdateCommand({
          TableName: this.table.tableName,
          Key: { PK: workspacePk(workspaceId), SK: destinationSk(destinationId) },
          UpdateExpression: 'SET #claim = :until',
          ConditionExpression:
            '#pendingNotice.#id = :id AND (attribute_not_exists(#claim) OR #claim <= :now)',
          ExpressionAttributeNames: {
            '#pendingNotice': 'pendingNotice',
            '#id': 'id',
            '#claim': 'pendingNoticeClaimedUntil',
          },
          ExpressionAttributeValues: { ':id': noticeId, ':now': nowMs, ':until': untilMs },
        }),
      );
      return true;
    } catch (error) {
      if (isConditionFailed(error)) return false;
      return mapDynamoError(error);
    }
  }

  /**
   * Forgets the pending notice once it is published, only while it is still notice `noticeId` (a later
   * outcome may have replaced it). Returns false when it was not (or no longer) pending.
   */
  async clearPendingNotice(workspaceId: string, destinationId: string, noticeId: string): Promise<boolean> {
    try {
      await this.table.client.send(
        new UpdateCommand({
          TableName: this.table.tableName,
          Key: { PK: workspacePk(workspaceId), SK: destinationSk(destinationId) },
          UpdateExpression: 'SET #pendingNotice = :null REMOVE #claim',
          ConditionExpression: '#pendingNotice.#id = :id',
          ExpressionAttributeNames: {
            '#pendingNotice': 'pendingNotice',
            '#id': 'id',
            '#claim': 'pendingNoticeClaimedUntil',
          },
          ExpressionAttributeValues: { ':null': null, ':id': noticeId },
        }),
      );
      return true;
    } catch (error) {
      if (isConditionFailed(error)) return false;
      return mapDynamoError(error);
    }
  }

  private async getDestinationState(
    workspaceId: string,
    destinationId: string,
  ): Promise<DestinationStateRead | undefined> {
    const result = await withDynamoErrors(() =>
      this.table.client.send(
        new GetCommand({
          TableName: this.table.tableName,
          Key: { PK: workspacePk(workspaceId), SK: destinationSk(destinationId) },
          ProjectionExpression: 'configVersion, isEnabled, dueAt, failing, pendingNotice',
          ConsistentRead: true,
        }),
      ),
    );
    return result.Item as DestinationStateRead | undefined;
  }
}
