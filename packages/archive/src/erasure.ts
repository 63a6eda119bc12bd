import {
  type AttributeValue,
  type DynamoDBClient,
  paginateQuery,
  type QueryCommandInput,
  type WriteRequest,
} from '@aws-sdk/client-dynamodb';
import {
  CURRENT_ROW_KEYS,
  EVENT_DATASETS,
  type ErasureLog,
  type EventDataset,
  eventRowBelongsTo,
  forEachConcurrently,
  InvalidInputError,
  KnownPerson,
  normalizePhone,
  subscriberPhoneOf,
  subscriberRowBelongsTo,
} from '@sluice/core';
import type { ErasureRecordInput } from '@sluice/control';
import {
  assertWorkspaceId,
  batchWrite,
  CurrentRowStore,
  DEFAULT_PAGE_LIMIT,
  type DynamoRejectedEvents,
  EVENT_SHARDS,
  eraseFromSegments,
  eventPk,
  MAX_RECORDED_AHEAD_MS,
  readPerRowUntil,
  SUBSCRIBER_SHARDS,
  segmentPk,
  subscriberPk,
} from '@sluice/eventlog';
import type { ArchiveBucket } from './bucket.js';
import { ARCHIVE_HOUR_MS, hourFloor } from './keys.js';

/** Whose rows an erasure removes. */
export type ErasureTarget =
  | { kind: 'subscriber'; subscriberId: string }
  | { kind: 'email'; email: string }
  /** The second product's people: a phone number (any spelling `normalizePhone` reads) or a contact id. */
  | { kind: 'phone'; phone: string }
  | { kind: 'contact'; contactId: string }
  | { kind: 'all' };

/** What an erasure removed. */
export interface ErasureReport {
  workspaceId: string;
  target: ErasureTarget;
  /** Event rows deleted from the hot event log. */
  hotRows: number;
  /** Items deleted from the subscribers table (the current state of a subscriber). */
  subscribers: number;
  /** Current rows deleted (a message's, a project's: `CurrentRowStore` state items). */
  currentRows: number;
  /** Archive objects read, rewritten without the rows, and deleted (every row matched). */
  archiveObjectsRead: number;
  archiveObjectsRewritten: number;
  archiveObjectsDeleted: number;
  /** Rows removed from the archive. */
  archiveRows: number;
  /** Object versions removed, so no earlier version keeps the rows. */
  archiveVersionsDeleted: number;
  /** Rows (events and subscriber upserts) removed from the workspace's rejected events. */
  rejectedRows: number;
  /** Rejected events rewritten without the rows, and deleted (nothing left). */
  rejectedRewritten: number;
  rejectedDeleted: number;
}

/** Options of {@link Eraser}. */
export interface EraserOptions {
  client: DynamoDBClient;
  eventsTable: string;
  subscribersTable: string;
  archive: ArchiveBucket;
  /**
   * Where the erasure is recorded before anything is deleted, and what the rejected events are rewritten by
   * (`@sluice/control` `ErasureLogStore`).
   */
  erasureLog: ErasureLog & {
    record(workspaceId: string, input: ErasureRecordInput, now?: Date): Promise<unknown>;
  };
  /** What ingestion refused, kept for a redrive (`@sluice/eventlog` `DynamoRejectedEvents`). */
  rejected: Pick<DynamoRejectedEvents, 'eraseErased'>;
  /** How long the hot log keeps rows: the hours searched there. */
  hotRetentionMs: number;
  /** @default Date.now */
  now?: () => number;
}

/** DynamoDB deletes expired items within days, not at once: the hot log is searched this far past its retention. */
const TTL_DELETION_SLACK_MS = 3 * 86_400_000;
/**
 * The datasets whose rows link a person's identifiers (subscriber ids and addresses; contact ids and phone
 * numbers): searched again while they teach a new one.
 */
const LINKING_DATASETS: readonly EventDataset[] = ['email_events', 'message_events', 'click_events'];
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
  if (target.kind === 'phone' && normalizePhone(target.phone, false) === undefined) {
    throw new InvalidInputError('Invalid phone number', [
      { path: 'phone', message: 'must be a phone number in E.164 (+15555550123), or a North American one' },
    ]);
  }
  if (target.kind === 'contact' && !/^[\x21-\x7e]{1,256}$/.test(target.contactId)) {
    throw new InvalidInputError('Invalid contact id', [
      { path: 'contact', message: 'must be 1-256 printable characters' },
    ]);
  }
}

/**
 * Erasure (an operator command: `sluice erase`): deletes a person's rows (by subscriber id or e-mail), or all of
 * a workspace's rows, from the hot event log, the subscribers table and the event archive, after recording the
 * erasure in the erasure log (which `events redrive` and `events rejected redrive` consult, so neither the ingest
 * dead-letter queue nor the rejected events write the person back).
 * 1. Who: the target's id or address, and what the subscribers table and the person's email events link to it
 *    (a subscriber's e-mail addresses, an address's subscriber ids), so the rows of every event dataset are
 *    found: `eventRowBelongsTo` of `@sluice/core` (subscriber id, `email`, `properties.email`).
 * 2. The hot log: every (hour, shard) partition of each event dataset from the retention (and the days TTL
 *    takes to delete) to {@link MAX_RECORDED_AHEAD_MS} ahead (the latest recorded time ingestion accepts).
 *    Email events first, again while they teach a new id or address, then SMS and custom events.
 * 3. The archive: each dataset's hour objects of the workspace (exact keys: never another workspace's objects
 *    under the same prefix) read and rewritten without the rows (deleted when none is left), then their older
 *    versions removed, so the bucket's versioning keeps no copy.
 * 4. The subscribers table: the person's items (by id or address), or all of them; and the current rows of
 *    the current-row datasets (`CurrentRowStore`: a message's state) that are the person's, or all of them.
 * 5. The rejected events (what ingestion refused, kept 14 days for `events rejected redrive`): each rewritten
 *    without the rows of the people the erasure log (now holding this erasure) names, or deleted when nothing
 *    is left (every one, for the whole workspace). Rejections kept under `-` (the envelope named no workspace)
 *    are no workspace's and are left alone: `erase --workspace -` reaches them.
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
    const startedAt = new Date(this.now());
    const report: ErasureReport = {
      workspaceId,
      target,
      hotRows: 0,
      subscribers: 0,
      currentRows: 0,
      archiveObjectsRead: 0,
      archiveObjectsRewritten: 0,
      archiveObjectsDeleted: 0,
      archiveRows: 0,
      archiveVersionsDeleted: 0,
      rejectedRows: 0,
      rejectedRewritten: 0,
      rejectedDeleted: 0,
    };
    if (target.kind === 'all') {
      await this.options.erasureLog.record(workspaceId, { kind: 'all' }, startedAt);
      for (const dataset of EVENT_DATASETS) {
        report.hotRows += await this.eraseHot(workspaceId, dataset, () => true);
        await this.eraseArchive(workspaceId, dataset, () => true, report);
      }
      report.subscribers = await this.eraseSubscribers(workspaceId, () => true);
      report.currentRows = await this.eraseCurrentRows(workspaceId, () => true);
      await this.eraseRejected(workspaceId, report);
      return report;
    }
    const person = new KnownPerson(
      target.kind === 'subscriber'
        ? { subscriberIds: [target.subscriberId] }
        : target.kind === 'email'
          ? { emails: [target.email] }
          : target.kind === 'phone'
            ? { phones: [target.phone] }
            : { contactIds: [target.contactId] },
    );
    await this.learnFromSubscribers(workspaceId, person);
    const recordedSize = person.size;
    await this.options.erasureLog.record(
      workspaceId,
      { kind: 'person', ...identifiersOf(person) },
      startedAt,
    );
    // Email events link subscriber ids and addresses, messages and clicks contact ids and phone numbers: a pass
    // that learns one is repeated, so rows before the one that taught it are erased too.
    let learned: boolean;
    do {
      learned = false;
      const matches = (line: string) => {
        if (!mentions(line, person)) return false;
        const row = parseLine(line);
        if (!eventRowBelongsTo(row, person)) return false;
        if (person.learnFrom(row)) learned = true;
        return true;
      };
      for (const dataset of LINKING_DATASETS) {
        report.hotRows += await this.eraseHot(workspaceId, dataset, matches);
        await this.eraseArchive(workspaceId, dataset, matches, report);
      }
    } while (learned);
    for (const dataset of EVENT_DATASETS.filter((name) => !LINKING_DATASETS.includes(name))) {
      const matches = (line: string) => mentions(line, person) && eventRowBelongsTo(parseLine(line), person);
      report.hotRows += await this.eraseHot(workspaceId, dataset, matches);
      await this.eraseArchive(workspaceId, dataset, matches, report);
    }
    report.subscribers = await this.eraseSubscribers(
      workspaceId,
      (line) => mentions(line, person) && subscriberRowBelongsTo(parseLine(line), person),
    );
    report.currentRows = await this.eraseCurrentRows(workspaceId, (row) => eventRowBelongsTo(row, person));
    const known = identifiersOf(person);
    if (person.size > recordedSize)
      await this.options.erasureLog.record(workspaceId, { kind: 'person', ...known }, startedAt);
    await this.eraseRejected(workspaceId, report);
    return report;
  }

  /** Rewrites the rejected events without what the erasure log (now holding this erasure) says was erased. */
  private async eraseRejected(workspaceId: string, report: ErasureReport): Promise<void> {
    const done = await this.options.rejected.eraseErased(workspaceId, this.options.erasureLog);
    report.rejectedRows += done.erased.events + done.erased.subscribers;
    report.rejectedRewritten += done.rewritten;
    report.rejectedDeleted += done.deleted;
  }

  /** Adds to `person` the ids, addresses and phone numbers of the subscribers table's items that are theirs. */
  private async learnFromSubscribers(workspaceId: string, person: KnownPerson): Promise<void> {
    const items: Record<string, unknown>[] = [];
    for (let shard = 0; shard < SUBSCRIBER_SHARDS; shard++) {
      await this.queryPartition(this.options.subscribersTable, subscriberPk(workspaceId, shard), (item) => {
        items.push(parseLine(item.line?.S));
      });
    }
    // An address or a phone number links ids and an id links addresses and numbers: until nothing new is learned.
    let grew = true;
    while (grew) {
      grew = false;
      for (const row of items) {
        if (!subscriberRowBelongsTo(row, person)) continue;
        const before = person.size;
        if (typeof row.id === 'string') person.subscriberIds.add(row.id);
        if (typeof row.email === 'string') person.emails.add(row.email.toLowerCase());
        const phone = subscriberPhoneOf(row);
        if (phone !== undefined) person.phones.add(phone);
        if (person.size > before) grew = true;
      }
    }
  }

  /** Deletes the dataset's matching rows from the hot log; returns how many. */
  private async eraseHot(
    workspaceId: string,
    dataset: EventDataset,
    matches: (line: string) => boolean,
  ): Promise<number> {
    const nowMs = this.now();
    const firstHour = hourFloor(nowMs - this.options.hotRetentionMs - TTL_DELETION_SLACK_MS);
    const lastHour = hourFloor(nowMs + MAX_RECORDED_AHEAD_MS);
    // Each hour's segments (rewritten without the rows) and its per-row items written before segments (none
    // in an hour beginning after the workspace's per-row marker).
    const perRowUntil =
      (await readPerRowUntil(this.options.client, this.options.eventsTable, workspaceId)) ??
      Number.POSITIVE_INFINITY;
    const partitions: { pk: string; segments: boolean }[] = [];
    for (let hourMs = firstHour; hourMs <= lastHour; hourMs += ARCHIVE_HOUR_MS) {
      partitions.push({ pk: segmentPk(workspaceId, dataset, hourMs), segments: true });
      for (let shard = 0; hourMs <= perRowUntil && shard < EVENT_SHARDS; shard++)
        partitions.push({ pk: eventPk(workspaceId, dataset, hourMs, shard), segments: false });
    }
    // Most partitions are empty: one small Query each, many at once.
    let deleted = 0;
    await forEachConcurrently(partitions, HOT_PARTITIONS_AT_ONCE, async ({ pk, segments }) => {
      const { client, eventsTable } = this.options;
      // Not `deleted += await …`: that reads `deleted` before the other workers add to it.
      const count = segments
        ? await eraseFromSegments(client, eventsTable, pk, matches)
        : await this.deleteMatching(eventsTable, pk, matches);
      deleted += count;
    });
    return deleted;
  }

  /**
   * Deletes the current rows (message and project states) whose row matches; returns how many. A message's
   * later change is then refused as unknown, so no erased message comes back.
   */
  private async eraseCurrentRows(
    workspaceId: string,
    matches: (row: Readonly<Record<string, unknown>>) => boolean,
  ): Promise<number> {
    const store = new CurrentRowStore({ client: this.options.client, eventsTable: this.options.eventsTable });
    let deleted = 0;
    for (const dataset of Object.keys(CURRENT_ROW_KEYS))
      deleted += await store.erase(workspaceId, dataset, matches);
    return deleted;
  }

  /** Deletes the subscribers table's matching items; returns how many. */
  private async eraseSubscribers(workspaceId: string, matches: (line: string) => boolean): Promise<number> {
    let deleted = 0;
    for (let shard = 0; shard < SUBSCRIBER_SHARDS; shard++) {
      deleted += await this.deleteMatching(
        this.options.subscribersTable,
        subscriberPk(workspaceId, shard),
        matches,
      );
    }
    return deleted;
  }

  /** Calls `each` with every item (key and line) of one partition, in pages of a bounded size. */
  private async queryPartition(
    tableName: string,
    pk: string,
    each: (item: Record<string, AttributeValue>) => void,
  ): Promise<void> {
    const input: QueryCommandInput = {
      TableName: tableName,
      KeyConditionExpression: '#pk = :pk',
      ExpressionAttributeNames: { '#pk': 'PK', '#sk': 'SK', '#line': 'line' },
      ExpressionAttributeValues: { ':pk': { S: pk } },
      ProjectionExpression: '#pk, #sk, #line',
      // Pages of a bounded size, as the reader asks (DynamoDB Local builds the rest of the partition otherwise).
      Limit: DEFAULT_PAGE_LIMIT,
    };
    for await (const page of paginateQuery({ client: this.options.client }, input)) {
      for (const item of page.Items ?? []) each(item);
    }
  }

  /** Deletes the items of one partition whose line matches; returns how many. */
  private async deleteMatching(
    tableName: string,
    pk: string,
    matches: (line: string) => boolean,
  ): Promise<number> {
    const requests: WriteRequest[] = [];
    await this.queryPartition(tableName, pk, (item) => {
      if (matches(item.line?.S ?? ''))
        requests.push({ DeleteRequest: { Key: { PK: item.PK!, SK: item.SK! } } });
    });
    if (requests.length > 0) await batchWrite(this.options.client, tableName, requests);
    return requests.length;
  }

  /** Rewrites the dataset's archive objects of the workspace without the matching rows. */
  private async eraseArchive(
    workspaceId: string,
    dataset: EventDataset,
    matches: (line: string) => boolean,
    report: ErasureReport,
  ): Promise<void> {
    const archive = this.options.archive;
    const keys: string[] = [];
    for await (const key of archive.listHourKeys(workspaceId, dataset)) keys.push(key);
    if (report.target.kind === 'all') {
      report.archiveObjectsDeleted += keys.length;
      report.archiveVersionsDeleted += await archive.deleteVersions(keys);
      return;
    }
    for (const key of keys) {
      report.archiveObjectsRead += 1;
      // One streaming pass finds the matching lines first: most objects hold none of the person's rows and are
      // left alone; the rewrite leaves out exactly the lines found (a line seen as the person's stays erased).
      const erased = new Set<string>();
      for await (const line of archive.readObject(key)) if (matches(line)) erased.add(line);
      if (erased.size === 0) continue;
      let removed = 0;
      const kept = async function* () {
        for await (const line of archive.readObject(key)) {
          if (erased.has(line)) removed += 1;
          else yield line;
        }
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

/** The person's identifiers, as the erasure log records them. */
function identifiersOf(person: KnownPerson) {
  return {
    subscriberIds: [...person.subscriberIds],
    emails: [...person.emails],
    phones: [...person.phones],
    contactIds: [...person.contactIds],
  };
}

/**
 * A cheap test on the text before a line is parsed: true when it may hold one of the person's ids or addresses
 * (as JSON spells them; addresses in any case).
 */
function mentions(line: string, person: KnownPerson): boolean {
  for (const id of person.subscriberIds) if (line.includes(JSON.stringify(id).slice(1, -1))) return true;
  for (const id of person.contactIds) if (line.includes(JSON.stringify(id).slice(1, -1))) return true;
  // Stored phone numbers are E.164, as the person's are.
  for (const phone of person.phones) if (line.includes(phone)) return true;
  if (person.emails.size === 0) return false;
  const lower = line.toLowerCase();
  for (const email of person.emails) if (lower.includes(JSON.stringify(email).slice(1, -1))) return true;
  return false;
}

/** A stored line as an object (an unreadable line as an empty one, which no person's rule matches). */
function parseLine(line: string | undefined): Record<string, unknown> {
  if (line === undefined || line === '') return {};
  try {
    const value: unknown = JSON.parse(line);
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : {};
  } catch {
    return {};
  }
}
