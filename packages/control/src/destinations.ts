import {
  GetCommand,
  QueryCommand,
  type QueryCommandInput,
  TransactWriteCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import {
  backoffDelayMs,
  type ChildLink,
  ConflictError,
  type Dataset,
  DATASETS,
  fileFormatOf,
  type Destination,
  type DestinationView,
  InvalidInputError,
  isEventDataset,
  DatabaseUnavailableError,
  type SealedSecret,
  sleep,
} from '@sluice/core';
import { ApiKeyStore, type ApiKeyRecord, type ApiKeySummary, type CreateApiKeyInput } from './api-keys.js';
import {
  CONTROL_BACKOFF,
  type ControlTable,
  type ControlTableOptions,
  deleteKeys,
  isConditionFailed,
  isTransactionConditionFailed,
  isTransactionConflict,
  resolveControlTable,
  mapDynamoError,
  withDynamoErrors,
} from './client.js';
import { dueAttributes, dueIndexUpdate } from './due-index.js';
import {
  cursorSk,
  cursorSkPrefix,
  destinationSk,
  EXPORT_COUNT_SK,
  isKeySafeId,
  runsPk,
  workspacePk,
} from './items.js';
import { transact } from './transactions.js';
import { type DataExportRun, listRuns } from './runs.js';
import { type Workspace, WorkspaceStore } from './workspaces.js';
import { ExternalIdKeyStore } from './external-id-key.js';
import { type ListChildrenOptions, OrganizationStore } from './organizations.js';

/** The destination attributes the control table holds (`exportedThrough` is derived from the cursors on read). */
type StoredField = keyof Destination;

const STORED: Record<StoredField, true> = {
  workspaceId: true,
  id: true,
  name: true,
  provider: true,
  bucket: true,
  region: true,
  endpoint: true,
  pathPrefix: true,
  encryption: true,
  role: true,
  accessKeyId: true,
  secret: true,
  datasets: true,
  frequency: true,
  format: true,
  compression: true,
  layout: true,
  schedule: true,
  schemaWritten: true,
  isEnabled: true,
  status: true,
  configVersion: true,
  startFrom: true,
  datasetStartedAt: true,
  childOrganizations: true,
  childOrganizationsAddedAt: true,
  childOrganizationsRemoved: true,
  nextRunAt: true,
  lastRunAt: true,
  lastSuccessAt: true,
  lastError: true,
  lastErrorAt: true,
  consecutiveFailures: true,
  totalRowsExported: true,
  manualRunQueued: true,
  failing: true,
  pendingNotice: true,
  createdAt: true,
  updatedAt: true,
};
const STORED_FIELDS = Object.keys(STORED) as StoredField[];

/** Fields that never change after create; `configVersion` only moves through `bumpConfigVersion`. */
const FIXED_FIELDS = new Set<string>(['workspaceId', 'id', 'createdAt', 'configVersion']);

/** What {@link ControlStore.updateDestination} may change. `updatedAt`, when given, overrides `options.now`. */
export type DestinationChanges = Partial<
  Omit<Destination, 'workspaceId' | 'id' | 'createdAt' | 'configVersion'>
>;

/** Options of {@link ControlStore.updateDestination}. */
export interface UpdateDestinationOptions {
  /** Bump `configVersion` (a change of location or credentials): a running export stops before its next file. */
  bumpConfigVersion?: boolean;
  /** @default now; becomes `updatedAt` */
  now?: Date;
  /**
   * Datasets whose cursors are deleted in the same transaction (datasets removed, or added back): their
   * progress and planned windows are forgotten, so an added dataset starts at its `datasetStartedAt`.
   * @default none
   */
  clearCursorsOf?: readonly Dataset[];
}

/** The result of {@link ControlStore.queueRun}. */
export interface QueueRunResult {
  /** False when a run was already queued or running, or the destination is paused: nothing changed. */
  queued: boolean;
  destination: DestinationView;
}

type Item = Record<string, unknown>;

/** What one write attempt of {@link ControlStore.updateDestination} found: the new item, or why not. */
type UpdateOutcome = Item | undefined | 'condition_failed' | 'conflict';

/** The conditional update of a destination item, sent alone or inside a transaction. */
interface DestinationUpdate {
  TableName: string;
  Key: Item;
  UpdateExpression: string;
  ConditionExpression: string;
  ExpressionAttributeNames: Record<string, string>;
  ExpressionAttributeValues: Record<string, unknown>;
}

/** Assembles the API's `exportedThrough`: a key per dataset of the destination, null until its first commit. */
export function exportedThroughFromCursors(
  datasets: readonly Dataset[],
  cursors: ReadonlyMap<string, Item>,
): DestinationView['exportedThrough'] {
  const exportedThrough: DestinationView['exportedThrough'] = {};
  for (const dataset of datasets) {
    const cursor = cursors.get(dataset);
    if (isEventDataset(dataset)) {
      const ms = cursor?.exportedThroughMs;
      exportedThrough[dataset] =
        typeof ms === 'number' && Number.isFinite(ms) ? new Date(ms).toISOString() : null;
    } else {
      const date = cursor?.snapshotDate;
      exportedThrough[dataset] = typeof date === 'string' ? date : null;
    }
  }
  return exportedThrough;
}

/**
 * The one place a destination is read back: a stored item without its keys and internal attributes, plus
 * what its cursors derive (`exportedThrough`).
 */
function toDestinationView(item: Item, cursors: ReadonlyMap<string, Item>): DestinationView {
  const picked: Item = {};
  for (const field of STORED_FIELDS) picked[field] = item[field];
  const destination = picked as unknown as Destination;
  // Items stored before formats existed say `jsonl.gz` and have no compression.
  Object.assign(destination, fileFormatOf(picked));
  const datasets = Array.isArray(destination.datasets) ? destination.datasets : [];
  return Object.assign(destination, { exportedThrough: exportedThroughFromCursors(datasets, cursors) });
}

/**
 * The control table item of a destination: its stored fields (not `exportedThrough`), its keys and its due
 * index attributes. What {@link ControlStore.createDestination} puts; seeding tools batch-write the same.
 */
export function destinationItem(destination: Destination): Item {
  const item: Item = {};
  for (const field of STORED_FIELDS) item[field] = destination[field];
  return Object.assign(item, dueAttributes(destination), {
    PK: workspacePk(destination.workspaceId),
    SK: destinationSk(destination.id),
  });
}

/** The dataset a cursor item belongs to, from its sort key; `undefined` for any other item. */
function cursorDataset(sk: string, destinationId: string): string | undefined {
  const prefix = cursorSkPrefix(destinationId);
  if (!sk.startsWith(prefix)) return undefined;
  const dataset = sk.slice(prefix.length);
  return (DATASETS as readonly string[]).includes(dataset) ? dataset : undefined;
}

const MAX_UPDATE_ATTEMPTS = 5;

/**
 * The control table as the API sees it: workspaces, API keys, destinations (with their cursors' progress)
 * and run history. Every DynamoDB error passes through `mapDynamoError`: throttling and connection
 * failures become a retryable `DatabaseUnavailableError`.
 */
export class ControlStore {
  private readonly table: ControlTable;
  private readonly apiKeys: ApiKeyStore;
  private readonly workspaces: WorkspaceStore;
  private readonly externalIdKey: ExternalIdKeyStore;
  private readonly organizations: OrganizationStore;

  constructor(options: ControlTableOptions) {
    this.table = resolveControlTable(options);
    this.apiKeys = new ApiKeyStore(this.table);
    this.workspaces = new WorkspaceStore(this.table);
    this.externalIdKey = new ExternalIdKeyStore(this.table);
    this.organizations = new OrganizationStore(this.table);
  }

  /** See {@link OrganizationStore.listChildren}. */
  listChildren(parentId: string, options?: ListChildrenOptions): Promise<ChildLink[]> {
    return this.organizations.listChildren(parentId, options);
  }

  /** See {@link ExternalIdKeyStore.getSealedExternalIdKey}. */
  getSealedExternalIdKey(): Promise<SealedSecret | undefined> {
    return this.externalIdKey.getSealedExternalIdKey();
  }

  /** See {@link ExternalIdKeyStore.putSealedExternalIdKey}. */
  putSealedExternalIdKey(sealed: SealedSecret): Promise<boolean> {
    return this.externalIdKey.putSealedExternalIdKey(sealed);
  }

  /** See {@link WorkspaceStore.ensureWorkspace}. */
  ensureWorkspace(workspaceId: string, name?: string, now?: Date): Promise<Workspace> {
    return this.workspaces.ensureWorkspace(workspaceId, name, now);
  }

  /** See {@link WorkspaceStore.getWorkspace}. */
  getWorkspace(workspaceId: string): Promise<Workspace | undefined> {
    return this.workspaces.getWorkspace(workspaceId);
  }

  /** See {@link ApiKeyStore.createApiKey}. */
  createApiKey(input: CreateApiKeyInput): Promise<{ apiKey: string; record: ApiKeyRecord }> {
    return this.apiKeys.createApiKey(input);
  }

  /** See {@link ApiKeyStore.findApiKey}: no database read for a malformed key. */
  findApiKey(apiKey: string): Promise<ApiKeyRecord | undefined> {
    return this.apiKeys.findApiKey(apiKey);
  }

  /** See {@link ApiKeyStore.listApiKeys}: never the key, nor its hash. */
  listApiKeys(workspaceId: string): Promise<ApiKeySummary[]> {
    return this.apiKeys.listApiKeys(workspaceId);
  }

  /** See {@link ApiKeyStore.upgradeKeysWithoutId}. */
  upgradeKeysWithoutId(now?: Date): Promise<number> {
    return this.apiKeys.upgradeKeysWithoutId(now);
  }

  /** See {@link ApiKeyStore.revokeApiKey}. */
  revokeApiKey(workspaceId: string, keyId: string, now?: Date): Promise<ApiKeySummary | undefined> {
    return this.apiKeys.revokeApiKey(workspaceId, keyId, now);
  }

  /**
   * Stores a new destination (read back with `exportedThrough` all null: cursors hold progress). The due index keys
   * are set when the destination is enabled and has a `nextRunAt`. In the same transaction, the workspace's
   * export count (`EXPORT_COUNT`) goes up by one, on condition that it is below `maxPerWorkspace` when given,
   * so concurrent creates never pass the limit. A workspace without the count (exports from before it) gets it
   * initialised with its existing destinations + 1, on condition that it still does not exist. Throws `ConflictError` (`conflict`) when the id is already
   * taken in the workspace, `ConflictError` (`limit_exceeded`) when the workspace has its maximum.
   */
  async createDestination(
    destination: Destination,
    options: { maxPerWorkspace?: number } = {},
  ): Promise<DestinationView> {
    if (!isKeySafeId(destination.workspaceId) || !isKeySafeId(destination.id)) {
      throw new InvalidInputError('Destination or workspace id is not valid.');
    }
    const item = destinationItem(destination);
    const max = options.maxPerWorkspace;
    const countKey = { PK: workspacePk(destination.workspaceId), SK: EXPORT_COUNT_SK };
    let failed: true | number = 1;
    // Two rounds at most: a first create that finds no count initialises it; losing that race to another
    // first create leaves a count, and the second round adds to it.
    for (let round = 0; round < 2 && failed === 1; round++) {
      const counted = await this.uncountedExports(destination.workspaceId);
      if (counted !== undefined && max !== undefined && counted >= max) {
        failed = 1;
        break;
      }
      failed = await transact(this.table, [
        {
          Put: {
            TableName: this.table.tableName,
            Item: item,
            ConditionExpression: 'attribute_not_exists(PK)',
          },
        },
        counted === undefined
          ? {
              Update: {
                TableName: this.table.tableName,
                Key: countKey,
                UpdateExpression: 'ADD #exports :one',
                ExpressionAttributeNames: { '#exports': 'exports' },
                ExpressionAttributeValues: { ':one': 1, ...(max === undefined ? {} : { ':max': max }) },
                ConditionExpression:
                  max === undefined ? 'attribute_exists(PK)' : 'attribute_exists(PK) AND #exports < :max',
              },
            }
          : {
              // Exports written before the count existed (or by tools that write destinations directly).
              Put: {
                TableName: this.table.tableName,
                Item: { ...countKey, exports: counted + 1 },
                ConditionExpression: 'attribute_not_exists(PK)',
              },
            },
      ]);
      if (counted === undefined) break;
    }
    if (failed === 0) throw new ConflictError('A data export with this id already exists.', 'conflict');
    if (failed === 1) {
      throw new ConflictError(
        `This workspace already has ${max} data exports, the most this deployment allows. Delete one first.`,
        'limit_exceeded',
      );
    }
    return toDestinationView(item, new Map());
  }

  /**
   * `undefined` when the workspace has its export count; without one, how many destinations it has
   * (a consistent Query of its `DEST#` items, cursors and leases left out), to initialise the count with.
   */
  private async uncountedExports(workspaceId: string): Promise<number | undefined> {
    const count = await withDynamoErrors(() =>
      this.table.client.send(
        new GetCommand({
          TableName: this.table.tableName,
          Key: { PK: workspacePk(workspaceId), SK: EXPORT_COUNT_SK },
          ConsistentRead: true,
        }),
      ),
    );
    if (count.Item !== undefined) return undefined;
    const items = await this.queryAll({
      KeyConditionExpression: 'PK = :pk AND begins_with(SK, :dest)',
      ExpressionAttributeValues: { ':pk': workspacePk(workspaceId), ':dest': 'DEST#' },
      ProjectionExpression: 'SK',
      ConsistentRead: true,
    });
    return items.filter((entry) => !String(entry.SK).slice('DEST#'.length).includes('#')).length;
  }

  /** The destination with its `exportedThrough`, or `undefined` (also for another workspace's id). */
  async getDestination(workspaceId: string, destinationId: string): Promise<DestinationView | undefined> {
    if (!isKeySafeId(workspaceId) || !isKeySafeId(destinationId)) return undefined;
    const sk = destinationSk(destinationId);
    const items = await this.queryAll({
      KeyConditionExpression: 'PK = :pk AND SK BETWEEN :from AND :to',
      ExpressionAttributeValues: {
        ':pk': workspacePk(workspaceId),
        ':from': sk,
        ':to': `${cursorSkPrefix(destinationId)}\uffff`,
      },
    });
    const destination = items.find((item) => item.SK === sk);
    if (destination === undefined) return undefined;
    return toDestinationView(destination, this.cursorsOf(items, destinationId));
  }

  /** Every destination of the workspace, oldest first, each with its `exportedThrough`. Leases are ignored. */
  async listDestinations(workspaceId: string): Promise<DestinationView[]> {
    if (!isKeySafeId(workspaceId)) return [];
    const items = await this.queryAll({
      KeyConditionExpression: 'PK = :pk AND begins_with(SK, :dest)',
      ExpressionAttributeValues: { ':pk': workspacePk(workspaceId), ':dest': 'DEST#' },
    });
    const destinations = new Map<string, Item>();
    const cursors = new Map<string, Map<string, Item>>();
    for (const item of items) {
      const rest = String(item.SK).slice('DEST#'.length);
      const separator = rest.indexOf('#');
      if (separator === -1) {
        destinations.set(rest, item);
        continue;
      }
      const id = rest.slice(0, separator);
      const dataset = cursorDataset(String(item.SK), id);
      if (dataset === undefined) continue;
      let byDataset = cursors.get(id);
      if (byDataset === undefined) {
        byDataset = new Map();
        cursors.set(id, byDataset);
      }
      byDataset.set(dataset, item);
    }
    return [...destinations.entries()]
      .map(([id, item]) => toDestinationView(item, cursors.get(id) ?? new Map()))
      .sort((a, b) =>
        a.createdAt === b.createdAt
          ? a.id < b.id
            ? -1
            : a.id > b.id
              ? 1
              : 0
          : a.createdAt < b.createdAt
            ? -1
            : 1,
      );
  }

  /**
   * Changes a destination in one conditional UpdateItem, so no half-written state is possible.
   * 1. If exactly one of `isEnabled`/`nextRunAt` changes, read the other (the due keys depend on both)
   *    and make the write conditional on it still holding, retrying on a race.
   * 2. SET the changed fields and `updatedAt`; bump `configVersion` when asked.
   * 3. Keep the sparse due index consistent: `dueKey`/`dueAt` set while enabled with a `nextRunAt`, removed otherwise.
   * 4. With `clearCursorsOf`, write the update and the deletion of those cursors in one transaction instead.
   * Returns the updated destination, or `undefined` when it does not exist.
   */
  async updateDestination(
    workspaceId: string,
    destinationId: string,
    changes: DestinationChanges,
    options: UpdateDestinationOptions = {},
  ): Promise<DestinationView | undefined> {
    if (!isKeySafeId(workspaceId) || !isKeySafeId(destinationId)) return undefined;
    const fields = Object.entries(changes).filter(
      ([field, value]) => value !== undefined && field in STORED && !FIXED_FIELDS.has(field),
    );
    const changed = new Map<string, unknown>(fields);
    const key = { PK: workspacePk(workspaceId), SK: destinationSk(destinationId) };
    const clearCursorsOf = [...new Set(options.clearCursorsOf ?? [])];

    for (let attempt = 0; attempt < MAX_UPDATE_ATTEMPTS; attempt++) {
      const names: Record<string, string> = {};
      const values: Record<string, unknown> = {};
      const sets: string[] = [];
      const conditions = ['attribute_exists(PK)'];
      let n = 0;
      for (const [field, value] of changed) {
        names[`#f${n}`] = field;
        values[`:f${n}`] = value;
        sets.push(`#f${n} = :f${n}`);
        n++;
      }
      if (!changed.has('updatedAt')) {
        names['#updatedAt'] = 'updatedAt';
        values[':updatedAt'] = (options.now ?? new Date()).toISOString();
        sets.push('#updatedAt = :updatedAt');
      }
      if (options.bumpConfigVersion === true) {
        names['#configVersion'] = 'configVersion';
        values[':zero'] = 0;
        values[':one'] = 1;
        sets.push('#configVersion = if_not_exists(#configVersion, :zero) + :one');
      }

      const removes: string[] = [];
      const touchesDue = changed.has('isEnabled') || changed.has('nextRunAt');
      if (touchesDue) {
        let isEnabled = changed.get('isEnabled') as boolean | undefined;
        let nextRunAt = changed.get('nextRunAt') as string | null | undefined;
        // Pausing removes the due keys whatever nextRunAt is, so only the other cases need the current state.
        if (isEnabled !== false && (isEnabled === undefined || nextRunAt === undefined)) {
          const current = await this.readDueState(workspaceId, destinationId);
          if (current === undefined) return undefined;
          if (isEnabled === undefined) {
            isEnabled = current.isEnabled;
            names['#isEnabled'] = 'isEnabled';
            values[':expectedEnabled'] = current.isEnabled;
            conditions.push('#isEnabled = :expectedEnabled');
          }
          if (nextRunAt === undefined) {
            nextRunAt = current.nextRunAt;
            names['#nextRunAt'] = 'nextRunAt';
            if (current.nextRunAt === null) {
              values[':nullType'] = 'NULL';
              conditions.push('(attribute_not_exists(#nextRunAt) OR attribute_type(#nextRunAt, :nullType))');
            } else {
              values[':expectedNextRunAt'] = current.nextRunAt;
              conditions.push('#nextRunAt = :expectedNextRunAt');
            }
          }
        }
        const due = dueIndexUpdate(workspaceId, destinationId, {
          isEnabled: isEnabled === true,
          nextRunAt: nextRunAt ?? null,
        });
        Object.assign(values, due.values);
        sets.push(...due.set);
        removes.push(...due.remove);
      }

      const update = {
        TableName: this.table.tableName,
        Key: key,
        UpdateExpression: `SET ${sets.join(', ')}${removes.length > 0 ? ` REMOVE ${removes.join(', ')}` : ''}`,
        ConditionExpression: conditions.join(' AND '),
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
      };
      const outcome =
        clearCursorsOf.length === 0
          ? await this.sendUpdate(update)
          : await this.sendUpdateClearingCursors(update, workspaceId, destinationId, clearCursorsOf);
      if (outcome === 'conflict') {
        await sleep(backoffDelayMs(attempt + 1, CONTROL_BACKOFF));
        continue;
      }
      if (outcome === 'condition_failed') {
        // Either the destination is gone, or the state read in step 1 changed: re-read and retry.
        if (conditions.length === 1) return undefined;
        continue;
      }
      if (outcome === undefined) return undefined;
      return toDestinationView(outcome, await this.readCursors(workspaceId, destinationId));
    }
    throw new DatabaseUnavailableError(
      new Error('updateDestination: too much contention on the destination'),
    );
  }

  /** One conditional UpdateItem: the new item, or 'condition_failed'. */
  private async sendUpdate(update: DestinationUpdate): Promise<UpdateOutcome> {
    try {
      const result = await this.table.client.send(new UpdateCommand({ ...update, ReturnValues: 'ALL_NEW' }));
      return result.Attributes;
    } catch (error) {
      if (isConditionFailed(error)) return 'condition_failed';
      return mapDynamoError(error);
    }
  }

  /**
   * The update and the deletion of some cursors in one TransactWriteItems: the new item (read back, since a
   * transaction returns nothing), 'condition_failed', or 'conflict' when another transaction on the same
   * items was in flight.
   */
  private async sendUpdateClearingCursors(
    update: DestinationUpdate,
    workspaceId: string,
    destinationId: string,
    datasets: readonly Dataset[],
  ): Promise<UpdateOutcome> {
    const pk = workspacePk(workspaceId);
    try {
      await this.table.client.send(
        new TransactWriteCommand({
          TransactItems: [
            { Update: update },
            ...datasets.map((dataset) => ({
              Delete: {
                TableName: this.table.tableName,
                Key: { PK: pk, SK: cursorSk(destinationId, dataset) },
              },
            })),
          ],
        }),
      );
    } catch (error) {
      if (isTransactionConditionFailed(error)) return 'condition_failed';
      if (isTransactionConflict(error)) return 'conflict';
      return mapDynamoError(error);
    }
    const result = await withDynamoErrors(() =>
      this.table.client.send(
        new GetCommand({ TableName: this.table.tableName, Key: update.Key, ConsistentRead: true }),
      ),
    );
    return result.Item;
  }

  /**
   * Deletes a destination, then its cursors and lease, then its run history, in batches of 25.
   * The destination item goes first, so a running export sees it gone before its next file.
   * Returns false when there was no such destination (leftover items of the id are still cleaned).
   */
  async deleteDestination(workspaceId: string, destinationId: string): Promise<boolean> {
    if (!isKeySafeId(workspaceId) || !isKeySafeId(destinationId)) return false;
    const pk = workspacePk(workspaceId);
    const sk = destinationSk(destinationId);
    // The destination item and the workspace's export count together: the count goes down only with a delete.
    // A missing count is not created, and a count never goes below 0: then the destination goes alone.
    const deleteItem = {
      Delete: {
        TableName: this.table.tableName,
        Key: { PK: pk, SK: sk },
        ConditionExpression: 'attribute_exists(PK)',
      },
    };
    let outcome = await transact(this.table, [
      deleteItem,
      {
        Update: {
          TableName: this.table.tableName,
          Key: { PK: pk, SK: EXPORT_COUNT_SK },
          UpdateExpression: 'ADD #exports :minusOne',
          ConditionExpression: '#exports > :zero',
          ExpressionAttributeNames: { '#exports': 'exports' },
          ExpressionAttributeValues: { ':minusOne': -1, ':zero': 0 },
        },
      },
    ]);
    if (outcome === 1) outcome = await transact(this.table, [deleteItem]);
    const deleted = outcome === true;
    const children = await this.queryAll({
      KeyConditionExpression: 'PK = :pk AND SK BETWEEN :from AND :to',
      ExpressionAttributeValues: { ':pk': pk, ':from': `${sk}#`, ':to': `${sk}#\uffff` },
      ProjectionExpression: 'PK, SK',
    });
    await deleteKeys(
      this.table,
      children.filter((item) => String(item.SK).startsWith(`${sk}#`)),
    );
    const runs = await this.queryAll({
      KeyConditionExpression: 'PK = :pk',
      ExpressionAttributeValues: { ':pk': runsPk(workspaceId, destinationId) },
      ProjectionExpression: 'PK, SK',
    });
    await deleteKeys(this.table, runs);
    return deleted;
  }

  /**
   * Queues a manual run: `status` queued, `manualRunQueued`, `nextRunAt` and the due index at `now`.
   * One conditional write (enabled, not already queued or running), so concurrent calls queue once.
   * Returns `queued: false` with the unchanged destination when a run is already queued or running or the
   * destination is paused (the API refuses paused ones first), and `undefined` when it does not exist.
   */
  async queueRun(workspaceId: string, destinationId: string, now: Date): Promise<QueueRunResult | undefined> {
    if (!isKeySafeId(workspaceId) || !isKeySafeId(destinationId)) return undefined;
    const nowIso = now.toISOString();
    const due = dueIndexUpdate(workspaceId, destinationId, { isEnabled: true, nextRunAt: nowIso });
    let attributes: Item | undefined;
    try {
      const result = await this.table.client.send(
        new UpdateCommand({
          TableName: this.table.tableName,
          Key: { PK: workspacePk(workspaceId), SK: destinationSk(destinationId) },
          UpdateExpression: `SET #status = :queued, manualRunQueued = :true, nextRunAt = :now, ${due.set.join(', ')}`,
          ConditionExpression:
            'attribute_exists(PK) AND isEnabled = :true AND NOT (#status IN (:queued, :running))',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: {
            ':queued': 'queued',
            ':running': 'running',
            ':true': true,
            ':now': nowIso,
            ...due.values,
          },
          ReturnValues: 'ALL_NEW',
        }),
      );
      attributes = result.Attributes;
    } catch (error) {
      if (!isConditionFailed(error)) return mapDynamoError(error);
      const destination = await this.getDestination(workspaceId, destinationId);
      return destination === undefined ? undefined : { queued: false, destination };
    }
    if (attributes === undefined) return undefined;
    return {
      queued: true,
      destination: toDestinationView(attributes, await this.readCursors(workspaceId, destinationId)),
    };
  }

  /** The destination's runs of the last 14 days, newest first (see {@link listRuns}). */
  listRuns(
    workspaceId: string,
    destinationId: string,
    options: Parameters<typeof listRuns>[3] = {},
  ): Promise<DataExportRun[]> {
    return listRuns(this.table, workspaceId, destinationId, options);
  }

  /** The cursor items of one destination, by dataset. */
  private async readCursors(workspaceId: string, destinationId: string): Promise<Map<string, Item>> {
    const prefix = cursorSkPrefix(destinationId);
    const items = await this.queryAll({
      KeyConditionExpression: 'PK = :pk AND begins_with(SK, :prefix)',
      ExpressionAttributeValues: { ':pk': workspacePk(workspaceId), ':prefix': prefix },
    });
    return this.cursorsOf(items, destinationId);
  }

  private cursorsOf(items: Item[], destinationId: string): Map<string, Item> {
    const cursors = new Map<string, Item>();
    for (const item of items) {
      const dataset = cursorDataset(String(item.SK), destinationId);
      if (dataset !== undefined) cursors.set(dataset, item);
    }
    return cursors;
  }

  private async readDueState(
    workspaceId: string,
    destinationId: string,
  ): Promise<{ isEnabled: boolean; nextRunAt: string | null } | undefined> {
    const result = await withDynamoErrors(() =>
      this.table.client.send(
        new GetCommand({
          TableName: this.table.tableName,
          Key: { PK: workspacePk(workspaceId), SK: destinationSk(destinationId) },
          ProjectionExpression: 'isEnabled, nextRunAt',
          ConsistentRead: true,
        }),
      ),
    );
    if (result.Item === undefined) return undefined;
    return {
      isEnabled: result.Item.isEnabled === true,
      nextRunAt: typeof result.Item.nextRunAt === 'string' ? result.Item.nextRunAt : null,
    };
  }

  /** Every item of a consistent Query, all pages. */
  private async queryAll(input: Omit<QueryCommandInput, 'TableName'>): Promise<Item[]> {
    const items: Item[] = [];
    let startKey: Item | undefined;
    do {
      const page = await withDynamoErrors(() =>
        this.table.client.send(
          new QueryCommand({
            ...input,
            TableName: this.table.tableName,
            ConsistentRead: true,
            ExclusiveStartKey: startKey,
          }),
        ),
      );
      items.push(...(page.Items ?? []));
      startKey = page.LastEvaluatedKey;
    } while (startKey !== undefined);
    return items;
  }
}
