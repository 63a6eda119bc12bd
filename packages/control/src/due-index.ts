import { createHash } from 'node:crypto';
import { paginateQuery, type QueryCommandInput, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { DUE_INDEX_SHARDS, type DestinationStatus } from '@sluice/core';
import {
  type ControlTable,
  type ControlTableOptions,
  isConditionFailed,
  mapDynamoError,
  resolveControlTable,
} from './client.js';
import { destinationSk, workspacePk } from './items.js';

/**
 * The due index: a sparse global index of the control table that Dispatch reads every minute
 * (docs/internals.md). This module owns its rule, and every store writes it through here:
 * - a destination carries `dueKey = DUE#<n>` (n from a hash of its id, so reads and writes spread over
 *   {@link DUE_INDEX_SHARDS} partitions) and `dueAt = <nextRunAt ISO>#<workspaceId>#<destinationId>` while it
 *   is enabled and has a `nextRunAt`, and neither attribute otherwise;
 * - Dispatch reads it in bounded pages, in shard order and `dueAt` order inside a shard, continuing from an
 *   opaque token, and marks a destination it starts by moving its `dueAt` (not `nextRunAt`) ahead.
 */

/** Name of the sparse global index of due destinations. */
export const DUE_INDEX_NAME = 'due';

/** The due index shard of a destination, 0..DUE_INDEX_SHARDS-1, from the SHA-256 of its id. */
export function dueShard(destinationId: string): number {
  return createHash('sha256').update(destinationId).digest().readUInt32BE(0) % DUE_INDEX_SHARDS;
}

/** `DUE#<n>`: the due index partition of shard n. */
function shardKey(shard: number): string {
  return `DUE#${shard}`;
}

/** `DUE#<n>`: the due index partition of a destination. */
export function dueKey(destinationId: string): string {
  return shardKey(dueShard(destinationId));
}

/** `<nextRunAt ISO>#<workspaceId>#<destinationId>`: the due index sort key. */
export function dueAt(nextRunAt: string, workspaceId: string, destinationId: string): string {
  return `${nextRunAt}#${workspaceId}#${destinationId}`;
}

/** The due-relevant state of a destination. */
export interface DueState {
  isEnabled: boolean;
  nextRunAt: string | null;
}

/**
 * The due index attributes a destination carries: both present only while it is enabled and has a
 * `nextRunAt`, so the index stays sparse. `undefined` means "remove them".
 */
export function dueAttributes(
  destination: { workspaceId: string; id: string } & DueState,
): { dueKey: string; dueAt: string } | undefined {
  if (!destination.isEnabled || destination.nextRunAt === null) return undefined;
  return {
    dueKey: dueKey(destination.id),
    dueAt: dueAt(destination.nextRunAt, destination.workspaceId, destination.id),
  };
}

/** Parts of an UpdateItem expression that put a destination's due index attributes in step with its state. */
export interface DueIndexUpdate {
  /** `SET` clauses, using the placeholders of `values`. */
  set: string[];
  /** Attribute names to `REMOVE`. */
  remove: string[];
  values: Record<string, string>;
}

/**
 * The update of the due index attributes for a destination in `state` ({@link dueAttributes} as an update
 * expression): SET `dueKey` and `dueAt` (placeholders `:dueKey`, `:dueAt`), or REMOVE both.
 */
export function dueIndexUpdate(workspaceId: string, destinationId: string, state: DueState): DueIndexUpdate {
  const due = dueAttributes({ workspaceId, id: destinationId, ...state });
  if (due === undefined) return { set: [], remove: ['dueKey', 'dueAt'], values: {} };
  return {
    set: ['dueKey = :dueKey', 'dueAt = :dueAt'],
    remove: [],
    values: { ':dueKey': due.dueKey, ':dueAt': due.dueAt },
  };
}

/** A destination found on the due index. */
export interface DueEntry {
  workspaceId: string;
  destinationId: string;
  /** The index sort key as read, for {@link DueIndex.markDispatched}. */
  dueAt: string;
  status: DestinationStatus | undefined;
  manualRunQueued: boolean;
}

/** One page of due destinations. */
export interface DuePage {
  entries: DueEntry[];
  /** Where the next page starts; absent when the index has no more due destinations. */
  next?: string;
}

/** Options of {@link DueIndex.queryDuePage}. */
export interface DuePageOptions {
  /** The most entries in the page. */
  limit: number;
  /** The `next` of the page before; absent for the first page. */
  after?: string;
}

/** Parses `<ISO>#<workspaceId>#<destinationId>`. */
function parseDueAt(value: string): { workspaceId: string; destinationId: string } | undefined {
  const [, workspaceId, destinationId] = value.split('#');
  if (workspaceId === undefined || destinationId === undefined) return undefined;
  return { workspaceId, destinationId };
}

/** A position in the index: after `dueAt` in `shard`, or at the start of `shard`. */
interface DuePosition {
  shard: number;
  dueAt?: string;
}

/** `<shard>:<dueAt of the last entry returned>`: small (ids and a time) and readable in the execution history. */
function encodePosition(position: Required<DuePosition>): string {
  return `${position.shard}:${position.dueAt}`;
}

function decodePosition(token: string | undefined): DuePosition {
  if (token === undefined) return { shard: 0 };
  const separator = token.indexOf(':');
  const shard = Number(token.slice(0, separator));
  const value = token.slice(separator + 1);
  if (
    separator < 1 ||
    !Number.isInteger(shard) ||
    shard < 0 ||
    shard >= DUE_INDEX_SHARDS ||
    !parseDueAt(value)
  ) {
    throw new Error(`not a due index page token: ${JSON.stringify(token.slice(0, 100))}`);
  }
  return { shard, dueAt: value };
}

/** The ExclusiveStartKey of the index entry `dueAt` in `shard`: the index key and the table key. */
function startKeyOf(position: DuePosition): Record<string, string> | undefined {
  if (position.dueAt === undefined) return undefined;
  const ids = parseDueAt(position.dueAt) as { workspaceId: string; destinationId: string };
  return {
    dueKey: shardKey(position.shard),
    dueAt: position.dueAt,
    PK: workspacePk(ids.workspaceId),
    SK: destinationSk(ids.destinationId),
  };
}

/** See the module comment. Takes `{ client?, tableName? }` like every control store. */
export class DueIndex {
  private readonly table: ControlTable;

  constructor(options: ControlTableOptions) {
    this.table = resolveControlTable(options);
  }

  /**
   * At most `limit` destinations due at `now` (`dueAt` at or before it), continuing after `options.after`:
   * shard by shard, oldest first within a shard. The page ends early only when the index does; `next` is
   * set whenever the page is full, so the last page may be empty.
   */
  async queryDuePage(now: Date, options: DuePageOptions): Promise<DuePage> {
    if (!Number.isInteger(options.limit) || options.limit < 1) {
      throw new Error(`the page limit must be a positive integer, got ${options.limit}`);
    }
    const start = decodePosition(options.after);
    const entries: DueEntry[] = [];
    for (let shard = start.shard; shard < DUE_INDEX_SHARDS; shard++) {
      const pages = paginateQuery(
        {
          client: this.table.client,
          pageSize: options.limit - entries.length,
          startingToken: shard === start.shard ? startKeyOf(start) : undefined,
        },
        this.dueQuery(now, shard),
      );
      try {
        for await (const page of pages) {
          for (const item of page.Items ?? []) {
            const entry = toDueEntry(item);
            if (entry === undefined) continue;
            entries.push(entry);
            if (entries.length === options.limit) {
              return { entries, next: encodePosition({ shard, dueAt: entry.dueAt }) };
            }
          }
        }
      } catch (error) {
        return mapDynamoError(error);
      }
    }
    return { entries };
  }

  /** Every destination due at `now`, all pages (tests and small tables; Dispatch reads page by page). */
  async queryDue(now: Date): Promise<DueEntry[]> {
    const due: DueEntry[] = [];
    let after: string | undefined;
    do {
      const page = await this.queryDuePage(now, { limit: 1_000, after });
      due.push(...page.entries);
      after = page.next;
    } while (after !== undefined);
    return due;
  }

  /**
   * Marks a due destination as dispatched: moves its due index entry (only `dueAt`, not `nextRunAt`) to
   * `untilIso`, conditional on the entry read, so of two overlapping dispatch ticks only one starts a run.
   * The run's commit or failure sets the real next time. Returns false when the entry changed (another
   * tick took it, the destination was paused, deleted or rescheduled).
   */
  async markDispatched(entry: DueEntry, untilIso: string): Promise<boolean> {
    try {
      await this.table.client.send(
        new UpdateCommand({
          TableName: this.table.tableName,
          Key: { PK: workspacePk(entry.workspaceId), SK: destinationSk(entry.destinationId) },
          UpdateExpression: 'SET dueAt = :next',
          ConditionExpression: 'dueAt = :expected',
          ExpressionAttributeValues: {
            ':expected': entry.dueAt,
            ':next': dueAt(untilIso, entry.workspaceId, entry.destinationId),
          },
        }),
      );
      return true;
    } catch (error) {
      if (isConditionFailed(error)) return false;
      return mapDynamoError(error);
    }
  }

  private dueQuery(now: Date, shard: number): QueryCommandInput {
    return {
      TableName: this.table.tableName,
      IndexName: DUE_INDEX_NAME,
      KeyConditionExpression: 'dueKey = :key AND dueAt <= :upper',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: { ':key': shardKey(shard), ':upper': `${now.toISOString()}#\uffff` },
      ProjectionExpression: 'dueAt, #status, manualRunQueued',
    };
  }
}

function toDueEntry(item: Record<string, unknown>): DueEntry | undefined {
  const value = String(item.dueAt);
  const ids = parseDueAt(value);
  if (ids === undefined) return undefined;
  return {
    ...ids,
    dueAt: value,
    status: typeof item.status === 'string' ? (item.status as DestinationStatus) : undefined,
    manualRunQueued: item.manualRunQueued === true,
  };
}
