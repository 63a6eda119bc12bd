/**
 * Rejected events: what ingestion refused, kept with the reasons so an operator can list it and redrive it
 * after a fix (`sluice events rejected list|redrive`), instead of only a log line.
 *
 * One item per bus event and kind, in the control table (`REJECTED#<workspaceId>` /
 * `<sent ms, 13 digits>#<bus event id>#<kind>`), expiring after {@link REJECTED_RETENTION_DAYS} days (TTL, the
 * dead-letter queue's retention):
 * - `envelope`: the whole bus event was refused (a detail that does not match its detail-type, a source that
 *   names another workspace, a detail-type ingestion does not take); `event` is the bus event as sent;
 * - `rows`: some rows of an accepted envelope were refused; `event` is the bus event with only those rows in
 *   its detail, and `reasons[i]` says why row i was refused.
 * Both hold a bus event, so a redrive is the ingest path again ({@link redriveRejected}). The key follows from
 * the bus event, so a retried invocation writes the same item again.
 *
 * Erased data is neither kept nor written back: `sluice erase` rewrites the workspace's rejections without the
 * erased rows ({@link DynamoRejectedEvents.eraseErased}), and a redrive leaves out what the erasure log says was
 * erased after the bus event was sent; both through `withoutErased` (`redrive.ts`), as `events redrive` does.
 */
import { randomUUID } from 'node:crypto';
import {
  type AttributeValue,
  ConditionalCheckFailedException,
  DeleteItemCommand,
  type DynamoDBClient,
  PutItemCommand,
  paginateQuery,
  paginateScan,
} from '@aws-sdk/client-dynamodb';
import type { Logger } from '@aws-lambda-powertools/logger';
import type { ErasureEntry, ErasureLog } from '@sluice/core';
import { type BusEvent, type BusIngestResult, type BusWriter, ingestBusEvent } from './bus.js';
import { defaultEventLogClient } from './client.js';
import { type ErasedCounts, withoutErased } from './redrive.js';

/** Days a rejected event is kept (the ingest dead-letter queue's retention). */
export const REJECTED_RETENTION_DAYS = 14;
/** The partition key prefix of rejected events in the control table. */
export const REJECTED_PK_PREFIX = 'REJECTED#';
/**
 * Characters of reasons kept per item, at most: with the bus event (at most 256 KB) the item stays under
 * DynamoDB's 400 KB. The rest is counted in a last reason.
 */
const MAX_REASON_CHARS = 100_000;

/** The reasons that fit in {@link MAX_REASON_CHARS}, and a count of the others. */
function boundedReasons(reasons: readonly string[]): string[] {
  const kept: string[] = [];
  let chars = 0;
  for (const reason of reasons) {
    if (chars + reason.length > MAX_REASON_CHARS) {
      kept.push(`(${reasons.length - kept.length} more reasons not kept)`);
      break;
    }
    kept.push(reason);
    chars += reason.length;
  }
  return kept;
}

/** What was refused: the whole envelope, or rows of it. */
export type RejectionKind = 'envelope' | 'rows';

/** A rejection as ingestion records it. */
export interface Rejection {
  /** The workspace the envelope names, else the one its source names, else `-`. */
  workspaceId: string;
  kind: RejectionKind;
  /** The bus event to ingest again: as sent (`envelope`), or with only the refused rows (`rows`). */
  event: BusEvent;
  /** Why: one reason for an envelope; for rows, `<field>[<i>]: <reason>` per refused row of `event`. */
  reasons: string[];
}

/** A stored rejection. */
export interface StoredRejection extends Rejection {
  /** Its id within the workspace (the sort key). */
  id: string;
  rejectedAt: string;
}

/** Where ingestion keeps rejections: {@link DynamoRejectedEvents}, or a stand-in in a unit test. */
export interface RejectedEventSink {
  /** Stores a rejection; returns its id (the same for the same bus event and kind). */
  put(rejection: Rejection): Promise<string>;
}

/** Options of {@link DynamoRejectedEvents}. */
export interface RejectedEventsOptions {
  /** The control table (`SLUICE_CONTROL_TABLE`). */
  tableName: string;
  /** @default the module-level client */
  client?: DynamoDBClient;
  /** @default Date.now */
  now?: () => number;
}

/** The rejection id of a bus event and kind: sent time, bus event id, kind. */
function rejectionId(event: BusEvent, kind: RejectionKind): string {
  const sentMs = event.time === undefined ? Number.NaN : Date.parse(event.time);
  const ms = Number.isFinite(sentMs) ? String(Math.max(0, sentMs)).padStart(13, '0') : '0000000000000';
  return `${ms}#${event.id ?? randomUUID()}#${kind}`;
}

/** Rejected events in the control table. */
export class DynamoRejectedEvents implements RejectedEventSink {
  private readonly client: DynamoDBClient;
  private readonly tableName: string;
  private readonly now: () => number;

  constructor(options: RejectedEventsOptions) {
    this.client = options.client ?? defaultEventLogClient();
    this.tableName = options.tableName;
    this.now = options.now ?? Date.now;
  }

  async put(rejection: Rejection): Promise<string> {
    const id = rejectionId(rejection.event, rejection.kind);
    const nowMs = this.now();
    await this.client.send(
      new PutItemCommand({
        TableName: this.tableName,
        Item: {
          PK: { S: `${REJECTED_PK_PREFIX}${rejection.workspaceId}` },
          SK: { S: id },
          workspaceId: { S: rejection.workspaceId },
          kind: { S: rejection.kind },
          event: { S: JSON.stringify(rejection.event) },
          reasons: { L: boundedReasons(rejection.reasons).map((reason) => ({ S: reason })) },
          rejectedAt: { S: new Date(nowMs).toISOString() },
          expiresAt: { N: String(Math.floor(nowMs / 1000) + REJECTED_RETENTION_DAYS * 86_400) },
        },
      }),
    );
    return id;
  }

  /**
   * The stored rejections, oldest sent first within a workspace: of one workspace (a Query), or of all (a Scan
   * of the control table for rejection items: an operator's command, not a hot path). Expired items that TTL has
   * not yet removed are left out.
   */
  async *list(workspaceId?: string): AsyncGenerator<StoredRejection> {
    const nowSeconds = Math.floor(this.now() / 1000);
    const pages =
      workspaceId === undefined
        ? paginateScan(
            { client: this.client },
            {
              TableName: this.tableName,
              FilterExpression: 'begins_with(PK, :prefix) AND expiresAt > :now',
              ExpressionAttributeValues: {
                ':prefix': { S: REJECTED_PK_PREFIX },
                ':now': { N: String(nowSeconds) },
              },
            },
          )
        : paginateQuery(
            { client: this.client },
            {
              TableName: this.tableName,
              KeyConditionExpression: 'PK = :pk',
              FilterExpression: 'expiresAt > :now',
              ExpressionAttributeValues: {
                ':pk': { S: `${REJECTED_PK_PREFIX}${workspaceId}` },
                ':now': { N: String(nowSeconds) },
              },
            },
          );
    for await (const page of pages) {
      for (const item of page.Items ?? []) yield fromItem(item);
    }
  }

  /**
   * Erasure (`@sluice/archive` `Eraser`, once the erasure is in the log): rewrites each rejection of the workspace
   * without the rows the log's erasures removed ({@link withoutErased}, the filter of every redrive), and the
   * reasons of those rows; deletes a rejection with nothing left (every rejection after an erasure of the whole
   * workspace). Expired items that TTL has not yet removed too. A rejection a redrive removed meanwhile stays
   * removed.
   */
  async eraseErased(workspaceId: string, erasures: ErasureLog): Promise<RejectedErasure> {
    const result: RejectedErasure = { rewritten: 0, deleted: 0, erased: { events: 0, subscribers: 0 } };
    const cache = new Map<string, Promise<readonly ErasureEntry[]>>();
    const pages = paginateQuery(
      { client: this.client },
      {
        TableName: this.tableName,
        KeyConditionExpression: 'PK = :pk',
        ExpressionAttributeValues: { ':pk': { S: `${REJECTED_PK_PREFIX}${workspaceId}` } },
      },
    );
    for await (const page of pages) {
      for (const item of page.Items ?? []) {
        const rejection = fromItem(item);
        const kept = await withoutErased(rejection.event, erasures, cache, result.erased, workspaceId);
        if (kept === rejection.event) continue;
        if (kept === undefined) {
          await this.delete(rejection);
          result.deleted++;
          continue;
        }
        const reasons =
          rejection.kind === 'rows'
            ? reasonsOfKept(rejection.event, kept, rejection.reasons)
            : rejection.reasons;
        try {
          await this.client.send(
            new PutItemCommand({
              TableName: this.tableName,
              Item: {
                ...item,
                event: { S: JSON.stringify(kept) },
                reasons: { L: reasons.map((reason) => ({ S: reason })) },
              },
              ConditionExpression: 'attribute_exists(PK)',
            }),
          );
          result.rewritten++;
        } catch (error) {
          if (!(error instanceof ConditionalCheckFailedException)) throw error;
        }
      }
    }
    return result;
  }

  /** Removes a rejection (once its bus event was ingested again). */
  async delete(rejection: Pick<StoredRejection, 'workspaceId' | 'id'>): Promise<void> {
    await this.client.send(
      new DeleteItemCommand({
        TableName: this.tableName,
        Key: { PK: { S: `${REJECTED_PK_PREFIX}${rejection.workspaceId}` }, SK: { S: rejection.id } },
      }),
    );
  }
}

/** What {@link DynamoRejectedEvents.eraseErased} did. */
export interface RejectedErasure {
  /** Rejections rewritten without the erased rows, and deleted (nothing left). */
  rewritten: number;
  deleted: number;
  /** Rows removed: events, subscriber upserts. */
  erased: ErasedCounts;
}

/**
 * The reasons of a `rows` rejection (`<field>[<i>]: <reason>`) for the rows `after` kept of `before`'s,
 * renumbered: a removed row's reason goes with it.
 */
function reasonsOfKept(before: BusEvent, after: BusEvent, reasons: readonly string[]): string[] {
  const rowsOf = (event: BusEvent, field: string): unknown =>
    (event.detail as Record<string, unknown>)[field];
  return reasons.flatMap((reason) => {
    const match = /^(\w+)\[(\d+)\]: /.exec(reason);
    if (match === null) return [reason];
    const [prefix, field = '', index] = match;
    const from = rowsOf(before, field);
    const to = rowsOf(after, field);
    if (from === to || !Array.isArray(from) || !Array.isArray(to)) return [reason];
    const at = to.indexOf(from[Number(index)]);
    return at === -1 ? [] : [`${field}[${at}]: ${reason.slice(prefix.length)}`];
  });
}

function fromItem(item: Record<string, AttributeValue>): StoredRejection {
  return {
    id: item.SK?.S ?? '',
    workspaceId: item.workspaceId?.S ?? '',
    kind: item.kind?.S === 'rows' ? 'rows' : 'envelope',
    event: JSON.parse(item.event?.S ?? '{}') as BusEvent,
    reasons: (item.reasons?.L ?? []).map((reason) => reason.S ?? ''),
    rejectedAt: item.rejectedAt?.S ?? '',
  };
}

/** What {@link redriveRejected} did (the `events rejected redrive --json` output). */
export interface RejectedRedriveSummary {
  /** Rejections read. */
  rejections: number;
  /** Rejections whose bus event went through the ingest path again (or was all erased), and were removed. */
  redriven: number;
  /** Events and subscriber changes written by the redrive. */
  written: { events: number; subscribers: number };
  /** Rejections refused again (kept, with the new reasons, under the same or a new id). */
  stillRejected: { workspaceId: string; id: string; reasons: string[] }[];
  /** Rejections whose write failed (kept as they were). */
  left: { workspaceId: string; id: string; reason: string }[];
  /** Left out because an erasure that ran after they were sent removed them: events, subscriber upserts. */
  erased: ErasedCounts;
}

/**
 * Ingests stored rejections again, through `ingest` (the ingest function's path, {@link ingestBusEvent}, with
 * this store as its sink): what is still refused is stored again with its reasons (the same bus event and kind
 * keep their id), and a rejection is removed once nothing of it is refused under its own id. Lateness is
 * judged from when the producer sent the bus event, as for the dead-letter queue. Erased data is never
 * written back: what erasures that ran after the bus event was sent removed is left out first
 * ({@link withoutErased}, as `events redrive` does), and a rejection with nothing left is removed.
 */
export async function redriveRejected(
  store: DynamoRejectedEvents,
  writer: BusWriter,
  logger: Logger,
  options: {
    /** The erasure log (`@sluice/control` `ErasureLogStore`): required, so no redrive writes erased data back. */
    erasures: ErasureLog;
    workspaceId?: string;
    id?: string;
  },
): Promise<RejectedRedriveSummary> {
  const summary: RejectedRedriveSummary = {
    rejections: 0,
    redriven: 0,
    written: { events: 0, subscribers: 0 },
    stillRejected: [],
    left: [],
    erased: { events: 0, subscribers: 0 },
  };
  const erasuresByWorkspace = new Map<string, Promise<readonly ErasureEntry[]>>();
  const all: StoredRejection[] = [];
  for await (const rejection of store.list(options.workspaceId)) {
    if (options.id === undefined || rejection.id === options.id) all.push(rejection);
  }
  for (const rejection of all) {
    summary.rejections++;
    const again: Rejection[] = [];
    const ids: string[] = [];
    const sink: RejectedEventSink = {
      async put(next) {
        again.push(next);
        const id = await store.put(next);
        ids.push(id);
        return id;
      },
    };
    let result: BusIngestResult;
    try {
      const event = await withoutErased(
        rejection.event,
        options.erasures,
        erasuresByWorkspace,
        summary.erased,
        rejection.workspaceId,
      );
      if (event === undefined) {
        await store.delete(rejection);
        summary.redriven++;
        continue;
      }
      result = await ingestBusEvent(writer, event, logger, { rejected: sink });
    } catch (error) {
      const reason = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      summary.left.push({
        workspaceId: rejection.workspaceId,
        id: rejection.id,
        reason: `write failed again: ${reason}`,
      });
      continue;
    }
    if (result.kind === 'events') summary.written.events += result.accepted;
    if (result.kind === 'subscribers') {
      summary.written.subscribers += result.upserted.accepted + result.deleted.accepted;
    }
    const keptInPlace = again.some(
      (next, index) => ids[index] === rejection.id && next.workspaceId === rejection.workspaceId,
    );
    if (!keptInPlace) await store.delete(rejection);
    if (again.length === 0) summary.redriven++;
    for (const [index, next] of again.entries()) {
      summary.stillRejected.push({ workspaceId: next.workspaceId, id: ids[index]!, reasons: next.reasons });
    }
  }
  return summary;
}
