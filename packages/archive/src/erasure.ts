import {
  type AttributeValue,
  type DynamoDBClient,
  paginateQuery,
  type QueryCommandInput,
  type WriteRequest,
} from '@aws-sdk/client-dynamodb';
import { EVENT_DATASETS, InvalidInputError } from '@sluice/core';
import {
  assertWorkspaceId,
  batchWrite,
  DEFAULT_PAGE_LIMIT,
  EVENT_SHARDS,
  eventPk,
  SUBSCRIBER_SHARDS,
  subscriberPk,
} from '@sluice/eventlog';
import type { ArchiveBucket } from './bucket.js';
import { ARCHIVE_HOUR_MS, archiveWorkspacePrefix, hourFloor } from './keys.js';

/** Whose rows an erasure removes. */
export type ErasureTarget =
  | { kind: 'subscriber'; subscriberId: string }
  | { kind: 'email'; email: string }
  | { kind: 'all' };

/** What an erasure removed. */
export interface ErasureReport {
  workspaceId: string;
  target: ErasureTarget;
  /** Event rows deleted from the hot event log. */
  hotRows: number;
  /** Items deleted from the subscribers table (the current state of a subscriber). */
  subscribers: number;
  /** Archive objects read, rewritten without the rows, and deleted (every row matched). */
  archiveObjectsRead: number;
  archiveObjectsRewritten: number;
  archiveObjectsDeleted: number;
  /** Rows removed from the archive. */
  archiveRows: number;
  /** Object versions removed, so no earlier version keeps the rows. */
  archiveVersionsDeleted: number;
}

/** Options of {@link Eraser}. */
export interface EraserOptions {
  client: DynamoDBClient;
  eventsTable: string;
  subscribersTable: string;
  archive: ArchiveBucket;
  /** How long the hot log keeps rows: the hours searched there. */
  hotRetentionMs: number;
  /** @default Date.now */
  now?: () => number;
}

/** DynamoDB deletes expired items within days, not at once: the hot log is searched this far past its retention. */
const TTL_DELETION_SLACK_MS = 3 * 86_400_000;
/** Event log partitions searched at once. */
const HOT_PARTITIONS_AT_ONCE = 32;

/** Checks an erasure target: a non-empty id or an e-mail address. */
export function assertErasureTarget(target: ErasureTarget): void {
  if (target.kind === 'subscriber' && !/^[\x21-\x7e]{1,200}$/.test(target.subscriberId)) {
    throw new InvalidInputError('Invalid subscriber id', [
      { path: 'subscriber', message: 'must be 1-200 printable characters' },
    ]);
  }
  if (target.kind === 'email' && !/^[^\s@]+@[^\s@]+$/.test(target.email)) {
    throw new InvalidInputError('Invalid e-mail address', [
      { path: 'email', message: 'must be an e-mail address' },
    ]);
  }
}

/** A predicate over a serialized row: true when it belongs to the target. */
export function rowMatcher(target: ErasureTarget): (line: string) => boolean {
  if (target.kind === 'all') return () => true;
  if (target.kind === 'subscriber') {
    const id = target.subscriberId;
    // Cheap pre-check on the text before parsing the line.
    return (line) =>
      line.includes(id) && (JSON.parse(line) as { subscriber_id?: unknown }).subscriber_id === id;
  }
  const email = target.email.toLowerCase();
  return (line) => {
    if (!line.toLowerCase().includes(email)) return false;
    const value = (JSON.parse(line) as { email?: unknown }).email;
    return typeof value === 'string' && value.toLowerCase() === email;
  };
}

/**
 * Erasure (an operator command: `sluice erase`): deletes a subscriber's rows (by subscriber id or e-mail), or
 * all of a workspace's rows, from the hot event log, the subscribers table and the event archive.
 * 1. The hot log: every (hour, shard) partition of each event dataset within the retention (and the days TTL
 *    takes to delete), matching rows deleted.
 * 2. The subscribers table: the subscriber's item (by id, or every item with the e-mail), or all of them.
 * 3. The archive: every object of the workspace read and rewritten without the matching rows (deleted when
 *    none is left), then its older versions removed, so the bucket's versioning keeps no copy.
 * Files already delivered to customers' buckets are theirs and are not touched. The hot log goes first, so a
 * compaction running at the same time archives no erased row it had not read before; running the command
 * again after the next compaction settles that race (it reports 0 when nothing is left).
 */
export class Eraser {
  private readonly options: EraserOptions;
  private readonly now: () => number;

  constructor(options: EraserOptions) {
    this.options = options;
    this.now = options.now ?? Date.now;
  }

  async erase(workspaceId: string, target: ErasureTarget): Promise<ErasureReport> {
    assertWorkspaceId(workspaceId);
    assertErasureTarget(target);
    const matches = rowMatcher(target);
    const report: ErasureReport = {
      workspaceId,
      target,
      hotRows: 0,
      subscribers: 0,
      archiveObjectsRead: 0,
      archiveObjectsRewritten: 0,
      archiveObjectsDeleted: 0,
      archiveRows: 0,
      archiveVersionsDeleted: 0,
    };
    report.hotRows = await this.eraseHot(workspaceId, matches);
    report.subscribers = await this.eraseSubscribers(workspaceId, target, matches);
    await this.eraseArchive(workspaceId, target, matches, report);
    return report;
  }

  private async eraseHot(workspaceId: string, matches: (line: string) => boolean): Promise<number> {
    const nowMs = this.now();
    const firstHour = hourFloor(nowMs - this.options.hotRetentionMs - TTL_DELETION_SLACK_MS);
    const partitions: string[] = [];
    for (const dataset of EVENT_DATASETS) {
      for (let hourMs = firstHour; hourMs <= hourFloor(nowMs) + ARCHIVE_HOUR_MS; hourMs += ARCHIVE_HOUR_MS) {
        for (let shard = 0; shard < EVENT_SHARDS; shard++)
          partitions.push(eventPk(workspaceId, dataset, hourMs, shard));
      }
    }
    // Most partitions are empty: one small Query each, many at once.
    let deleted = 0;
    let next = 0;
    const worker = async () => {
      while (next < partitions.length) {
        const pk = partitions[next++] as string;
        const count = await this.deleteMatching(this.options.eventsTable, { PK: { S: pk } }, matches);
        deleted += count;
      }
    };
    await Promise.all(Array.from({ length: HOT_PARTITIONS_AT_ONCE }, worker));
    return deleted;
  }

  private async eraseSubscribers(
    workspaceId: string,
    target: ErasureTarget,
    matches: (line: string) => boolean,
  ): Promise<number> {
    let deleted = 0;
    for (let shard = 0; shard < SUBSCRIBER_SHARDS; shard++) {
      const key: { PK: AttributeValue } = { PK: { S: subscriberPk(workspaceId, shard) } };
      // A subscriber's own item is keyed by its id; its snapshot line carries `subscriber_id` too.
      const bySubscriber =
        target.kind === 'subscriber'
          ? (line: string, sk: string) => sk === target.subscriberId || matches(line)
          : (line: string) => matches(line);
      deleted += await this.deleteMatching(this.options.subscribersTable, key, bySubscriber);
    }
    return deleted;
  }

  /** Deletes the items of one partition whose line matches; returns how many. */
  private async deleteMatching(
    tableName: string,
    partition: { PK: AttributeValue },
    matches: (line: string, sk: string) => boolean,
  ): Promise<number> {
    const input: QueryCommandInput = {
      TableName: tableName,
      KeyConditionExpression: '#pk = :pk',
      ExpressionAttributeNames: { '#pk': 'PK', '#sk': 'SK', '#line': 'line' },
      ExpressionAttributeValues: { ':pk': partition.PK },
      ProjectionExpression: '#pk, #sk, #line',
      // Pages of a bounded size, as the reader asks (DynamoDB Local builds the rest of the partition otherwise).
      Limit: DEFAULT_PAGE_LIMIT,
    };
    const requests: WriteRequest[] = [];
    for await (const page of paginateQuery({ client: this.options.client }, input)) {
      for (const item of page.Items ?? []) {
        const line = item.line?.S ?? '';
        const sk = item.SK?.S ?? '';
        if (matches(line, sk)) requests.push({ DeleteRequest: { Key: { PK: item.PK!, SK: item.SK! } } });
      }
    }
    if (requests.length > 0) await batchWrite(this.options.client, tableName, requests);
    return requests.length;
  }

  private async eraseArchive(
    workspaceId: string,
    target: ErasureTarget,
    matches: (line: string) => boolean,
    report: ErasureReport,
  ): Promise<void> {
    const archive = this.options.archive;
    const keys: string[] = [];
    for await (const key of archive.listKeys(archiveWorkspacePrefix(workspaceId))) keys.push(key);
    if (target.kind === 'all') {
      report.archiveObjectsDeleted = keys.length;
      report.archiveVersionsDeleted = await archive.deleteVersions(keys);
      return;
    }
    for (const key of keys) {
      report.archiveObjectsRead += 1;
      let removed = 0;
      // One streaming pass counts first: most objects hold none of the subscriber's rows and are left alone.
      for await (const line of archive.readObject(key)) if (matches(line)) removed += 1;
      if (removed === 0) continue;
      const kept = async function* () {
        for await (const line of archive.readObject(key)) if (!matches(line)) yield line;
      };
      const written = await archive.writeObject(key, kept());
      report.archiveRows += removed;
      if (written.written) {
        report.archiveObjectsRewritten += 1;
        report.archiveVersionsDeleted += await archive.deleteVersions([key], { keepLatest: true });
      } else {
        report.archiveObjectsDeleted += 1;
        report.archiveVersionsDeleted += await archive.deleteVersions([key]);
      }
    }
  }
}
