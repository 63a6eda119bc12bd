import { randomBytes } from 'node:crypto';
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { InvalidInputError, isWorkspaceId, WORKSPACE_ID_RULE } from '@sluice/core';
import {
  type ControlTable,
  type ControlTableOptions,
  resolveControlTable,
  withDynamoErrors,
} from './client.js';
import { isKeySafeId, WORKSPACE_SK, workspacePk } from './items.js';

/** A workspace: the tenant every destination and API key belongs to. */
export interface Workspace {
  id: string;
  name: string;
  createdAt: string;
  /**
   * Random (128 bits), made with the workspace item and never reused: a workspace id created again after its
   * item was deleted gets a new one. New external IDs are derived from it (`externalIdFor`). Workspaces made
   * before it existed get one at their next `ensureWorkspace`.
   */
  uid: string;
}

function toWorkspace(workspaceId: string, item: Record<string, unknown>): Workspace {
  return {
    id: workspaceId,
    name: typeof item.name === 'string' ? item.name : workspaceId,
    createdAt: String(item.createdAt ?? ''),
    uid: String(item.uid ?? ''),
  };
}

/**
 * Refuses a workspace id a new workspace may not have ({@link WORKSPACE_ID_RULE}), with the API's input error.
 * Stores still read and write items of an existing workspace whose id is only key-safe.
 */
export function assertNewWorkspaceId(workspaceId: string): void {
  if (!isWorkspaceId(workspaceId)) {
    throw new InvalidInputError(`Workspace id is not valid: ${WORKSPACE_ID_RULE}.`, [
      { path: 'workspaceId', message: WORKSPACE_ID_RULE },
    ]);
  }
}

/** Workspace items of the control table (`PK = WS#<id>`, `SK = WORKSPACE`). */
export class WorkspaceStore {
  private readonly table: ControlTable;

  constructor(options: ControlTableOptions) {
    this.table = resolveControlTable(options);
  }

  /**
   * Creates the workspace if it does not exist and returns it. Idempotent: an existing workspace keeps
   * its name, `createdAt` and `uid` (one UpdateItem with `if_not_exists`, so concurrent calls agree); one made
   * before `uid` existed gets its uid here.
   */
  async ensureWorkspace(workspaceId: string, name?: string, now: Date = new Date()): Promise<Workspace> {
    assertNewWorkspaceId(workspaceId);
    const result = await withDynamoErrors(() =>
      this.table.client.send(
        new UpdateCommand({
          TableName: this.table.tableName,
          Key: { PK: workspacePk(workspaceId), SK: WORKSPACE_SK },
          UpdateExpression:
            'SET #name = if_not_exists(#name, :name), createdAt = if_not_exists(createdAt, :now), #uid = if_not_exists(#uid, :uid)',
          ExpressionAttributeNames: { '#name': 'name', '#uid': 'uid' },
          ExpressionAttributeValues: {
            ':name': name ?? workspaceId,
            ':now': now.toISOString(),
            ':uid': randomBytes(16).toString('hex'),
          },
          ReturnValues: 'ALL_NEW',
        }),
      ),
    );
    return toWorkspace(workspaceId, result.Attributes ?? {});
  }

  /** The workspace, or `undefined` when it does not exist. */
  async getWorkspace(workspaceId: string): Promise<Workspace | undefined> {
    if (!isKeySafeId(workspaceId)) return undefined;
    const result = await withDynamoErrors(() =>
      this.table.client.send(
        new GetCommand({
          TableName: this.table.tableName,
          Key: { PK: workspacePk(workspaceId), SK: WORKSPACE_SK },
          ConsistentRead: true,
        }),
      ),
    );
    return result.Item === undefined ? undefined : toWorkspace(workspaceId, result.Item);
  }
}
