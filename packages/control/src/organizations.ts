import { randomBytes } from 'node:crypto';
import { GetCommand, paginateQuery } from '@aws-sdk/lib-dynamodb';
import {
  type ChildLink,
  ConflictError,
  InvalidInputError,
  MAX_CHILD_ORGANIZATIONS,
  NotFoundError,
} from '@sluice/core';
import {
  type ControlTable,
  type ControlTableOptions,
  mapDynamoError,
  resolveControlTable,
  withDynamoErrors,
} from './client.js';
import {
  CHILD_LINK_SK_PREFIX,
  childLinkSk,
  isKeySafeId,
  ORG_SK,
  WORKSPACE_SK,
  workspacePk,
} from './items.js';
import { transact } from './transactions.js';

type Item = Record<string, unknown>;

/** A workspace's organisation state (its `ORG` item). */
interface OrgState {
  /** The current parent (a child workspace). */
  parentId?: string;
  /** The sort key of the current link item, in the parent's partition. */
  parentLinkSk?: string;
  /** The current number of children (a parent workspace). */
  childCount?: number;
}

/** Options of {@link OrganizationStore.listChildren}. */
export interface ListChildrenOptions {
  /** Every link ever made, unlinked ones included (for backfills); @default only the current links */
  includeUnlinked?: boolean;
}

/** How often an unlink that raced another change of the same child is tried again. */
const UNLINK_ATTEMPTS = 3;

function toChildLink(item: Item): ChildLink {
  return {
    parentId: String(item.parentId),
    childId: String(item.childId),
    linkedAt: String(item.linkedAt),
    unlinkedAt: typeof item.unlinkedAt === 'string' ? item.unlinkedAt : null,
  };
}

function workspaceNotFound(workspaceId: string): NotFoundError {
  return new NotFoundError(`Workspace "${workspaceId}" does not exist.`);
}

/**
 * The organisation hierarchy in the control table: one level (a parent's children are never parents, a
 * parent is never a child), a child has at most one current parent. Items, in the workspaces' partitions:
 * - `WS#<ws>` / `ORG`: `parentId` and `parentLinkSk` while the workspace is a child, `childCount` (its
 *   current children) once it has been a parent;
 * - `WS#<parent>` / `CHILD#<childId>#<linkedAt>#<nonce>`: one link, `parentId`, `childId`, `linkedAt`, and
 *   `unlinkedAt` once ended. Links are kept, so the children of any past time can be listed.
 * Link and unlink are one transaction each whose conditions hold the rules, so concurrent calls cannot break
 * them (two links of one child to two parents: exactly one commits).
 */
export class OrganizationStore {
  private readonly table: ControlTable;

  constructor(options: ControlTableOptions) {
    this.table = resolveControlTable(options);
  }

  /**
   * Links `childId` to `parentId` and returns the new link. Refused: a self-link (`InvalidInputError`), a
   * workspace that does not exist (`NotFoundError`), a parent that is a child or already has
   * {@link MAX_CHILD_ORGANIZATIONS} children, a child that is a parent or already has a parent (`ConflictError`).
   */
  async link(parentId: string, childId: string, now: Date = new Date()): Promise<ChildLink> {
    if (parentId === childId) {
      throw new InvalidInputError(`A workspace cannot be its own child ("${parentId}").`, [
        { path: 'child', message: 'Must differ from the parent' },
      ]);
    }
    if (!isKeySafeId(parentId)) throw workspaceNotFound(parentId);
    if (!isKeySafeId(childId)) throw workspaceNotFound(childId);
    const link: ChildLink = { parentId, childId, linkedAt: now.toISOString(), unlinkedAt: null };
    const linkSk = childLinkSk(childId, link.linkedAt, randomBytes(4).toString('hex'));
    const { tableName } = this.table;
    const outcome = await transact(this.table, [
      {
        ConditionCheck: {
          TableName: tableName,
          Key: { PK: workspacePk(parentId), SK: WORKSPACE_SK },
          ConditionExpression: 'attribute_exists(PK)',
        },
      },
      {
        ConditionCheck: {
          TableName: tableName,
          Key: { PK: workspacePk(childId), SK: WORKSPACE_SK },
          ConditionExpression: 'attribute_exists(PK)',
        },
      },
      {
        Update: {
          TableName: tableName,
          Key: { PK: workspacePk(parentId), SK: ORG_SK },
          UpdateExpression: 'ADD childCount :one',
          ConditionExpression:
            'attribute_not_exists(parentId) AND (attribute_not_exists(childCount) OR childCount < :max)',
          ExpressionAttributeValues: { ':one': 1, ':max': MAX_CHILD_ORGANIZATIONS },
        },
      },
      {
        Update: {
          TableName: tableName,
          Key: { PK: workspacePk(childId), SK: ORG_SK },
          UpdateExpression: 'SET parentId = :parent, parentLinkSk = :linkSk',
          ConditionExpression:
            'attribute_not_exists(parentId) AND (attribute_not_exists(childCount) OR childCount = :zero)',
          ExpressionAttributeValues: { ':parent': parentId, ':linkSk': linkSk, ':zero': 0 },
        },
      },
      {
        Put: {
          TableName: tableName,
          Item: { PK: workspacePk(parentId), SK: linkSk, ...link, unlinkedAt: undefined },
          ConditionExpression: 'attribute_not_exists(PK)',
        },
      },
    ]);
    if (outcome === true) return link;
    throw await this.linkRefusal(outcome, parentId, childId);
  }

  /** Why a link's transaction failed at item `failed`, read again to name the cause. */
  private async linkRefusal(failed: number, parentId: string, childId: string): Promise<Error> {
    if (failed === 0) return workspaceNotFound(parentId);
    if (failed === 1) return workspaceNotFound(childId);
    if (failed === 2) {
      const parentState = await this.state(parentId);
      if (parentState.parentId === undefined && (parentState.childCount ?? 0) >= MAX_CHILD_ORGANIZATIONS) {
        return new ConflictError(
          `Workspace "${parentId}" already has ${MAX_CHILD_ORGANIZATIONS} children, the most a workspace may have; unlink one first.`,
          'conflict',
        );
      }
      return new ConflictError(
        `Workspace "${parentId}" is a child of "${parentState.parentId ?? 'another workspace'}", so it cannot have children (one level only).`,
        'conflict',
      );
    }
    const childState = await this.state(childId);
    if (childState.parentId === parentId) {
      return new ConflictError(`Workspace "${childId}" is already a child of "${parentId}".`, 'conflict');
    }
    if (childState.parentId !== undefined) {
      return new ConflictError(
        `Workspace "${childId}" is already a child of "${childState.parentId}"; unlink it from there first.`,
        'conflict',
      );
    }
    if ((childState.childCount ?? 0) > 0) {
      return new ConflictError(
        `Workspace "${childId}" has children, so it cannot become a child (one level only).`,
        'conflict',
      );
    }
    return new ConflictError(
      `The organisation of "${childId}" changed at the same time; try again.`,
      'conflict',
    );
  }

  /**
   * Ends the current link of `childId` to `parentId` (sets `unlinkedAt`; the link is kept) and returns it.
   * `NotFoundError` when `childId` is not currently a child of `parentId`.
   */
  async unlink(parentId: string, childId: string, now: Date = new Date()): Promise<ChildLink> {
    const notChild = new NotFoundError(`Workspace "${childId}" is not a child of "${parentId}".`);
    if (!isKeySafeId(parentId) || !isKeySafeId(childId)) throw notChild;
    const { tableName } = this.table;
    for (let attempt = 0; attempt < UNLINK_ATTEMPTS; attempt++) {
      const state = await this.state(childId);
      if (state.parentId !== parentId || state.parentLinkSk === undefined) throw notChild;
      const linkKey = { PK: workspacePk(parentId), SK: state.parentLinkSk };
      const current = await this.get(linkKey);
      if (current === undefined) throw notChild;
      const unlinkedAt = now.toISOString();
      const outcome = await transact(this.table, [
        {
          Update: {
            TableName: tableName,
            Key: { PK: workspacePk(childId), SK: ORG_SK },
            UpdateExpression: 'REMOVE parentId, parentLinkSk',
            ConditionExpression: 'parentId = :parent AND parentLinkSk = :linkSk',
            ExpressionAttributeValues: { ':parent': parentId, ':linkSk': state.parentLinkSk },
          },
        },
        {
          Update: {
            TableName: tableName,
            Key: { PK: workspacePk(parentId), SK: ORG_SK },
            UpdateExpression: 'ADD childCount :minusOne',
            ConditionExpression: 'childCount > :zero',
            ExpressionAttributeValues: { ':minusOne': -1, ':zero': 0 },
          },
        },
        {
          Update: {
            TableName: tableName,
            Key: linkKey,
            UpdateExpression: 'SET unlinkedAt = :now',
            ConditionExpression: 'attribute_exists(PK) AND attribute_not_exists(unlinkedAt)',
            ExpressionAttributeValues: { ':now': unlinkedAt },
          },
        },
      ]);
      if (outcome === true) return { ...toChildLink(current), unlinkedAt };
    }
    throw new ConflictError(
      `The organisation of "${childId}" changed at the same time; try again.`,
      'conflict',
    );
  }

  /**
   * The children of a workspace, oldest link first: the current links, or with `includeUnlinked` every link
   * ever made (a child linked twice appears twice). One Query of the parent's `CHILD#` items.
   */
  async listChildren(parentId: string, options: ListChildrenOptions = {}): Promise<ChildLink[]> {
    if (!isKeySafeId(parentId)) return [];
    const links: ChildLink[] = [];
    try {
      const pages = paginateQuery(
        { client: this.table.client },
        {
          TableName: this.table.tableName,
          KeyConditionExpression: 'PK = :pk AND begins_with(SK, :prefix)',
          ExpressionAttributeValues: { ':pk': workspacePk(parentId), ':prefix': CHILD_LINK_SK_PREFIX },
          ConsistentRead: true,
        },
      );
      for await (const page of pages) for (const item of page.Items ?? []) links.push(toChildLink(item));
    } catch (error) {
      mapDynamoError(error);
    }
    return links
      .filter((link) => options.includeUnlinked === true || link.unlinkedAt === null)
      .sort((a, b) => a.linkedAt.localeCompare(b.linkedAt) || a.childId.localeCompare(b.childId));
  }

  /** The current parent of a workspace, or null when it is not a child. */
  async parentOf(childId: string): Promise<string | null> {
    if (!isKeySafeId(childId)) return null;
    return (await this.state(childId)).parentId ?? null;
  }

  private async state(workspaceId: string): Promise<OrgState> {
    const item = await this.get({ PK: workspacePk(workspaceId), SK: ORG_SK });
    return {
      ...(typeof item?.parentId === 'string' ? { parentId: item.parentId } : {}),
      ...(typeof item?.parentLinkSk === 'string' ? { parentLinkSk: item.parentLinkSk } : {}),
      ...(typeof item?.childCount === 'number' ? { childCount: item.childCount } : {}),
    };
  }

  private async get(key: Item): Promise<Item | undefined> {
    const result = await withDynamoErrors(() =>
      this.table.client.send(
        new GetCommand({ TableName: this.table.tableName, Key: key, ConsistentRead: true }),
      ),
    );
    return result.Item;
  }
}
