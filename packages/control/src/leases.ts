import { DeleteCommand, GetCommand } from '@aws-sdk/lib-dynamodb';
import {
  type ControlTable,
  type ControlTableOptions,
  isConditionFailed,
  mapDynamoError,
  resolveControlTable,
  withDynamoErrors,
} from './client.js';
import { destinationSk, leaseSk, workspacePk } from './items.js';
import { type TransactItem, transact } from './transactions.js';

/**
 * The lease a run holds on its destination (`DEST#<id>#LEASE`): which run, its token and until when. Every
 * write a run makes to its destination's state is fenced by the token, so of two executions at once only
 * the holder changes anything; a run that died is found when its lease expires.
 */
export interface Lease {
  workspaceId: string;
  destinationId: string;
  runId: string;
  token: string;
  /** ISO start of the run that holds it (also the run record's sort key). */
  startedAt: string;
  expiresAtMs: number;
  /** The destination's `configVersion` the run was claimed under (absent on leases of older versions). */
  configVersion?: number;
}

/** What fences a write: the lease a run holds, or "no live lease at `nowMs`" (the dispatcher). */
export type LeaseFence =
  | { lease: Pick<Lease, 'workspaceId' | 'destinationId' | 'token'> }
  | { noLiveLeaseAt: number; workspaceId: string; destinationId: string };

/** The destination of a fence. */
export function fencedDestination(fence: LeaseFence): { workspaceId: string; destinationId: string } {
  return 'lease' in fence
    ? { workspaceId: fence.lease.workspaceId, destinationId: fence.lease.destinationId }
    : { workspaceId: fence.workspaceId, destinationId: fence.destinationId };
}

/** Options of {@link LeaseStore.claim}. */
export interface ClaimLeaseInput {
  workspaceId: string;
  destinationId: string;
  runId: string;
  token: string;
  startedAt: string;
  nowMs: number;
  durationMs: number;
  /** The destination's `configVersion` at claim, kept on the lease (a run that dies is settled by it). */
  configVersion?: number;
}

/** Leases of destinations in the control table. Takes `{ client?, tableName? }` like every control store. */
export class LeaseStore {
  private readonly table: ControlTable;

  constructor(options: ControlTableOptions) {
    this.table = resolveControlTable(options);
  }

  /**
   * Claims the destination's lease in one transaction: the lease is put when none exists or the held one
   * expired, and only while the destination exists (a deleted destination is never claimed again). When the
   * same run claims again (a retried ClaimAndPlan), its existing lease is returned unchanged. Returns
   * `undefined` when another live run holds it or the destination is gone.
   */
  async claim(input: ClaimLeaseInput): Promise<Lease | undefined> {
    const lease: Lease = {
      workspaceId: input.workspaceId,
      destinationId: input.destinationId,
      runId: input.runId,
      token: input.token,
      startedAt: input.startedAt,
      expiresAtMs: input.nowMs + input.durationMs,
      ...(input.configVersion !== undefined ? { configVersion: input.configVersion } : {}),
    };
    const pk = workspacePk(input.workspaceId);
    const outcome = await transact(this.table, [
      {
        ConditionCheck: {
          TableName: this.table.tableName,
          Key: { PK: pk, SK: destinationSk(input.destinationId) },
          ConditionExpression: 'attribute_exists(PK)',
        },
      },
      {
        Put: {
          TableName: this.table.tableName,
          Item: {
            PK: pk,
            SK: leaseSk(input.destinationId),
            runId: lease.runId,
            token: lease.token,
            startedAt: lease.startedAt,
            expiresAtMs: lease.expiresAtMs,
            ...(lease.configVersion !== undefined ? { configVersion: lease.configVersion } : {}),
            // Let DynamoDB clean up a lease left behind, long after it expired (dispatch settles it first).
            expiresAt: Math.floor(lease.expiresAtMs / 1000) + 86_400,
          },
          ConditionExpression: 'attribute_not_exists(PK) OR expiresAtMs < :now',
          ExpressionAttributeValues: { ':now': input.nowMs },
        },
      },
    ]);
    if (outcome === true) return lease;
    if (outcome === 0) return undefined;
    const old = await this.get(input.workspaceId, input.destinationId);
    if (old !== undefined && old.runId === input.runId) return old;
    return undefined;
  }

  /** Releases the lease if this token still holds it. Returns false when it did not. */
  async release(lease: Pick<Lease, 'workspaceId' | 'destinationId' | 'token'>): Promise<boolean> {
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

  /** The lease stored for a destination (live or expired), consistent read, or `undefined`. */
  async get(workspaceId: string, destinationId: string): Promise<Lease | undefined> {
    const result = await withDynamoErrors(() =>
      this.table.client.send(
        new GetCommand({
          TableName: this.table.tableName,
          Key: { PK: workspacePk(workspaceId), SK: leaseSk(destinationId) },
          ConsistentRead: true,
        }),
      ),
    );
    const item = result.Item;
    if (item === undefined || typeof item.token !== 'string') return undefined;
    return {
      workspaceId,
      destinationId,
      runId: String(item.runId),
      token: item.token,
      startedAt: String(item.startedAt),
      expiresAtMs: Number(item.expiresAtMs),
      ...(typeof item.configVersion === 'number' ? { configVersion: item.configVersion } : {}),
    };
  }

  /** True when the fence holds now: the token holds the lease, or no live lease exists. Consistent read. */
  async holds(fence: LeaseFence): Promise<boolean> {
    const { workspaceId, destinationId } = fencedDestination(fence);
    const stored = await this.get(workspaceId, destinationId);
    if ('lease' in fence) return stored !== undefined && stored.token === fence.lease.token;
    return stored === undefined || stored.expiresAtMs < fence.noLiveLeaseAt;
  }
}

/**
 * The transaction item that checks a fence: put it first in a transaction so its index is 0. With
 * `release`, the item also deletes the lease it checked (a run's last write, or the settling of an expired
 * run): the change and the release happen together or not at all.
 */
export function leaseCondition(
  tableName: string,
  fence: LeaseFence,
  options: { release?: boolean } = {},
): TransactItem {
  const { workspaceId, destinationId } = fencedDestination(fence);
  const check = {
    TableName: tableName,
    Key: { PK: workspacePk(workspaceId), SK: leaseSk(destinationId) },
    ...('lease' in fence
      ? {
          ConditionExpression: '#token = :token',
          ExpressionAttributeNames: { '#token': 'token' },
          ExpressionAttributeValues: { ':token': fence.lease.token },
        }
      : {
          ConditionExpression: 'attribute_not_exists(PK) OR expiresAtMs < :now',
          ExpressionAttributeValues: { ':now': fence.noLiveLeaseAt },
        }),
  };
  return options.release === true && 'lease' in fence ? { Delete: check } : { ConditionCheck: check };
}
