/**
 * Reading the event log back in recorded-time order.
 *
 * A window `(fromMs, toMs]` spans one or more hours. Each hour holds segments (segments.ts: compressed rows of
 * one ingest slice, in one `#seg` partition) and the per-row items written before segments (in `EVENT_SHARDS`
 * shards). The reader walks the hours in order; inside an hour it queries the segments that may hold rows of the
 * window and every shard (Query pages, `SK BETWEEN`, each next page fetched while the current one is merged) and
 * merges them by position, `<recordedAtMs>#<id>`: recorded time, ties broken by id; a position held twice is
 * read once, from the segment (the later write). The shards are queried only for hours beginning by the
 * workspace's per-row marker (per-row-until.ts), when it has one: no per-row item is recorded after it. Memory
 * holds at most two pages per cursor, the segments open at the merge's current time, and one output page,
 * whatever the window's size.
 *
 * Lines are taken from the low-level `{ S }` attribute as they are: no unmarshalling, no re-serializing.
 *
 * Expired rows are absent: an item whose `expiresAt` (epoch seconds) is before the reader's clock is filtered
 * out, because DynamoDB deletes expired items lazily (often days later) and DynamoDB Local never does. A filter
 * applies after `Limit`, so a page may come back empty with more to read: every reader here follows
 * `LastEvaluatedKey` until it has what it needs.
 */
import {
  type AttributeValue,
  type DynamoDBClient,
  QueryCommand,
  type QueryCommandInput,
} from '@aws-sdk/client-dynamodb';
import type { EventDataset } from '@sluice/core';
import { defaultEventLogClient, resolveTableName } from './client.js';
import {
  assertWorkspaceId,
  EVENT_SHARDS,
  eventPk,
  HOUR_MS,
  hourStart,
  padMs,
  resumeFrom,
  SUBSCRIBER_SHARDS,
  subscriberPk,
} from './keys.js';
import {
  liveRowsOf,
  MAX_SEGMENT_SPAN_MS,
  msOfKey,
  type SegmentRow,
  segmentPk,
  writtenIdOf,
} from './segments.js';
import { readPerRowUntil } from './per-row-until.js';
import type { EventPage, EventSource, SourcePage } from './source.js';

type Item = Record<string, AttributeValue>;

/** The part of a window inside one hour partition: recorded times `[loMs, hiMs]`. */
interface HourSlice {
  hourMs: number;
  loMs: number;
  hiMs: number;
}

/** Options of {@link EventLogReader}. */
export interface EventLogReaderOptions {
  /** @default the module-level client */
  client?: DynamoDBClient;
  /** The event log table (the entry point reads it from its configuration). */
  eventsTable: string;
  /** The subscribers table. */
  subscribersTable: string;
  /** Items per Query page (`Limit`); DynamoDB still ends a page at 1 MB. @default {@link DEFAULT_PAGE_LIMIT} */
  pageLimit?: number;
  /** Lines per yielded page of {@link EventLogReader.readWindow}. @default 1000 */
  batchSize?: number;
  /**
   * Strongly consistent reads (twice the cost). Exports trail real time by two minutes, so eventually
   * consistent reads see every row of a window. @default false
   */
  consistentRead?: boolean;
  /** The clock (epoch ms) deciding which rows have expired. @default Date.now */
  now?: () => number;
}

/**
 * `Limit` of the Query pages of {@link EventLogReader.readWindow} and {@link EventLogReader.readSubscribers}:
 * about one 1 MB page of 720-byte rows. DynamoDB Local builds every item of the key range before it cuts a page
 * at 1 MB, so without a `Limit` each page of a partition costs as much as all the items left in it: reading a
 * 40,000-item partition took 285 µs of the server's CPU a row without a Limit, 64 µs with 5,000; a 20,000-item one
 * 40 µs with 250, 31 µs with 500, 27 µs with 1,000 and 28 µs with 1,400. On DynamoDB the read units are the same (item sizes summed a page); pages of rows smaller
 * than 1 KB end sooner, so there are a few more Query calls, each shard's next page fetched while one is merged.
 */
export const DEFAULT_PAGE_LIMIT = 1_000;

/** `Limit` of the Query pages of segments (each up to ~350 KB before compression; a page ends at 1 MB anyway). */
export const SEGMENT_PAGE_LIMIT = 64;

/** Hours queried at once by {@link EventLogReader.hasRowsAfter}. */
const HAS_ROWS_HOURS_AT_ONCE = 6;
/** `Limit` of the first page {@link EventLogReader.hasRowsAfter} reads per partition, then ×10 a page up to the last. */
const HAS_ROWS_FIRST_LIMIT = 1;
const HAS_ROWS_MAX_LIMIT = 1_000;

/** Keeps the items that have not expired at `:nowSeconds` (and any without `expiresAt`). */
const NOT_EXPIRED = 'attribute_not_exists(#expiresAt) OR #expiresAt >= :nowSeconds';

/**
 * Rows in position order, a page at a time, for the merge of {@link EventLogReader.readWindow}: `keys[index]`
 * and `lines[index]` are the next row once `fill()` returned true.
 */
interface RowCursor {
  keys: string[];
  lines: string[];
  index: number;
  fill(): Promise<boolean>;
}

/** One shard's pages of one hour, the next page prefetched while the current one is consumed. */
class ShardCursor implements RowCursor {
  items: Item[] = [];
  keys: string[] = [];
  lines: string[] = [];
  index = 0;
  private next: Promise<{ items: Item[]; lastKey: Item | undefined }> | undefined;

  /** `skipThrough`: items whose sort key is at or before it are skipped (a resumed read's first hour). */
  constructor(
    private readonly client: DynamoDBClient,
    private readonly input: QueryCommandInput,
    private readonly skipThrough?: string,
    startKey?: Item,
  ) {
    this.next = this.prefetch(startKey);
  }

  /** Starts fetching a page; marked handled so that a consumer who stops early leaves no unhandled rejection. */
  private prefetch(startKey: Item | undefined) {
    const page = this.fetch(startKey);
    page.catch(() => {});
    return page;
  }

  private async fetch(startKey: Item | undefined) {
    const output = await this.client.send(
      new QueryCommand(startKey ? { ...this.input, ExclusiveStartKey: startKey } : this.input),
    );
    return { items: output.Items ?? [], lastKey: output.LastEvaluatedKey };
  }

  /** Makes `items[index]` the next item; false once the shard is exhausted. */
  async fill(): Promise<boolean> {
    while (this.index >= this.items.length) {
      if (this.next === undefined) return false;
      const page = await this.next;
      this.items = page.items;
      this.index = 0;
      const skip = this.skipThrough;
      if (skip !== undefined) {
        while (this.index < this.items.length && this.items[this.index]!.SK!.S! <= skip) this.index++;
      }
      this.next = page.lastKey ? this.prefetch(page.lastKey) : undefined;
      this.keys = this.items.map((item) => item.SK!.S!);
      this.lines = this.items.map((item) => item.line?.S ?? '');
    }
    return true;
  }
}

/** A decoded segment's rows still to merge, and its written id (the later segment's line wins a tie). */
interface OpenSegment {
  rows: SegmentRow[];
  index: number;
  writtenId: string;
}

/**
 * The rows of one hour's segment partition in position order: the segments come in order of their first
 * recorded time and may overlap, so a segment is decoded once the merge reaches its first time, and rows are
 * taken from the open segment with the smallest position. A position held by two segments is read once, from
 * the later written.
 */
class SegmentCursor implements RowCursor {
  keys: string[] = [];
  lines: string[] = [];
  index = 0;
  private readonly open: OpenSegment[] = [];

  constructor(
    private readonly source: ShardCursor,
    private readonly slice: HourSlice,
    private readonly nowSeconds: number,
    private readonly pageRows: number,
    private readonly skipThrough?: string,
  ) {}

  async fill(): Promise<boolean> {
    while (this.index >= this.keys.length) {
      this.keys = [];
      this.lines = [];
      this.index = 0;
      for (;;) {
        const min = this.smallest();
        // Open every segment that begins at or before the smallest position: it may hold a smaller one.
        if (
          await this.sourceBeginsBy(
            min === undefined ? Number.POSITIVE_INFINITY : msOfKey(min.rows[min.index]!.key),
          )
        ) {
          this.openNext();
          continue;
        }
        if (min === undefined) break;
        const key = min.rows[min.index]!.key;
        let chosen = min;
        for (const segment of this.open) {
          if (segment.rows[segment.index]!.key === key && segment.writtenId > chosen.writtenId)
            chosen = segment;
        }
        this.keys.push(key);
        this.lines.push(chosen.rows[chosen.index]!.line);
        for (const segment of this.open) if (segment.rows[segment.index]!.key === key) segment.index++;
        this.close();
        if (this.keys.length >= this.pageRows) break;
      }
      if (this.keys.length === 0) return false;
    }
    return true;
  }

  /** The open segment whose next row has the smallest position. */
  private smallest(): OpenSegment | undefined {
    let min: OpenSegment | undefined;
    for (const segment of this.open) {
      if (min === undefined || segment.rows[segment.index]!.key < min.rows[min.index]!.key) min = segment;
    }
    return min;
  }

  /** True when the next unopened segment begins at or before `ms`. */
  private async sourceBeginsBy(ms: number): Promise<boolean> {
    const source = this.source;
    if (source.index >= source.items.length && !(await source.fill())) return false;
    return msOfKey(source.keys[source.index]!) <= ms;
  }

  private openNext(): void {
    const item = this.source.items[this.source.index++]!;
    const rows = liveRowsOf(item, this.slice.loMs, this.slice.hiMs, this.nowSeconds, this.skipThrough);
    if (rows.length > 0) this.open.push({ rows, index: 0, writtenId: writtenIdOf(item.SK!.S!) });
  }

  /** Drops the segments whose rows are all taken. */
  private close(): void {
    for (let i = this.open.length - 1; i >= 0; i--) {
      const segment = this.open[i]!;
      if (segment.index >= segment.rows.length) this.open.splice(i, 1);
    }
  }
}

/** Reads the event log and the subscribers table. The DynamoDB implementation of {@link EventSource}. */
export class EventLogReader implements EventSource {
  private readonly client: DynamoDBClient;
  private readonly eventsTable: string | undefined;
  private readonly subscribersTable: string | undefined;
  private readonly pageLimit: number;
  private readonly batchSize: number;
  private readonly consistentRead: boolean;
  private readonly now: () => number;
  /** The per-row markers read (per-row-until.ts), by workspace; a workspace without one is asked again. */
  private readonly perRowUntil = new Map<string, number>();

  constructor(options: EventLogReaderOptions) {
    this.client = options.client ?? defaultEventLogClient();
    this.eventsTable = options.eventsTable;
    this.subscribersTable = options.subscribersTable;
    this.pageLimit = options.pageLimit ?? DEFAULT_PAGE_LIMIT;
    this.batchSize = options.batchSize ?? 1000;
    this.consistentRead = options.consistentRead ?? false;
    this.now = options.now ?? Date.now;
  }

  /**
   * The Query of one (hour, shard) partition over recorded times `[loMs, hiMs]`, without the items expired at
   * `nowSeconds`, projecting `projection` (`#sk`, `#line`).
   */
  private partitionQuery(
    workspaceId: string,
    dataset: EventDataset,
    slice: HourSlice,
    shard: number,
    nowSeconds: number,
    projection: readonly ('#sk' | '#line')[],
  ): QueryCommandInput {
    return {
      TableName: resolveTableName(this.eventsTable, 'events'),
      KeyConditionExpression: '#pk = :pk AND #sk BETWEEN :lo AND :hi',
      FilterExpression: NOT_EXPIRED,
      ExpressionAttributeNames: {
        '#pk': 'PK',
        '#sk': 'SK',
        '#expiresAt': 'expiresAt',
        ...(projection.includes('#line') ? { '#line': 'line' } : {}),
      },
      ExpressionAttributeValues: {
        ':pk': { S: eventPk(workspaceId, dataset, slice.hourMs, shard) },
        // `<13 digits>` sorts before every `<13 digits>#<id>`; `$` sorts right after `#`.
        ':lo': { S: padMs(slice.loMs) },
        ':hi': { S: `${padMs(slice.hiMs)}$` },
        ':nowSeconds': { N: String(nowSeconds) },
      },
      ...(projection.length > 0 ? { ProjectionExpression: projection.join(', ') } : {}),
      ConsistentRead: this.consistentRead,
      Limit: this.pageLimit,
    };
  }

  /**
   * The Query of one hour's segment partition for the segments that may hold rows recorded in `[loMs, hiMs]`:
   * those beginning at most {@link MAX_SEGMENT_SPAN_MS} before `loMs` and by `hiMs`, ending at or after `loMs`,
   * with a row not expired at `nowSeconds` (their last: {@link liveRowsOf} checks each row).
   */
  private segmentQuery(
    workspaceId: string,
    dataset: EventDataset,
    slice: HourSlice,
    nowSeconds: number,
  ): QueryCommandInput {
    return {
      TableName: resolveTableName(this.eventsTable, 'events'),
      KeyConditionExpression: '#pk = :pk AND #sk BETWEEN :lo AND :hi',
      FilterExpression: `#lastMs >= :loMs AND (${NOT_EXPIRED})`,
      ExpressionAttributeNames: { '#pk': 'PK', '#sk': 'SK', '#lastMs': 'lastMs', '#expiresAt': 'expiresAt' },
      ExpressionAttributeValues: {
        ':pk': { S: segmentPk(workspaceId, dataset, slice.hourMs) },
        ':lo': { S: padMs(Math.max(slice.hourMs, slice.loMs - MAX_SEGMENT_SPAN_MS)) },
        ':hi': { S: `${padMs(slice.hiMs)}$` },
        ':loMs': { N: String(slice.loMs) },
        ':nowSeconds': { N: String(nowSeconds) },
      },
      ConsistentRead: this.consistentRead,
      Limit: SEGMENT_PAGE_LIMIT,
    };
  }

  /**
   * The last recorded time a per-row item of the workspace can hold (its marker, per-row-until.ts), or +∞
   * without one: per-row shards are queried only for slices beginning by then.
   */
  private async perRowUntilOf(workspaceId: string): Promise<number> {
    const known = this.perRowUntil.get(workspaceId);
    if (known !== undefined) return known;
    const untilMs = await readPerRowUntil(
      this.client,
      resolveTableName(this.eventsTable, 'events'),
      workspaceId,
    );
    if (untilMs === undefined) return Number.POSITIVE_INFINITY;
    this.perRowUntil.set(workspaceId, untilMs);
    return untilMs;
  }

  /** The (hour, lo, hi) slices of `(fromMs, toMs]`, in order. */
  private static hours(fromMs: number, toMs: number): HourSlice[] {
    const slices: HourSlice[] = [];
    for (let hourMs = hourStart(fromMs + 1); hourMs <= toMs; hourMs += HOUR_MS) {
      slices.push({ hourMs, loMs: Math.max(fromMs + 1, hourMs), hiMs: Math.min(toMs, hourMs + HOUR_MS - 1) });
    }
    return slices;
  }

  /** {@inheritDoc EventSource.readWindow} */
  async *readWindow(
    workspaceId: string,
    dataset: EventDataset,
    fromMs: number,
    toMs: number,
    afterKey?: string,
  ): AsyncGenerator<EventPage, void, undefined> {
    assertWorkspaceId(workspaceId);
    // A resumed read starts at the millisecond of the last line written and skips through that line.
    const { startMs, afterKey: resumeAfter } = resumeFrom(fromMs, toMs, afterKey);
    if (!(toMs > startMs)) return;
    let out: EventPage = { lines: [], keys: [], recordedMs: [] };
    const slices = EventLogReader.hours(startMs, toMs);
    // One clock reading for the whole window, so every partition agrees on what has expired.
    const nowSeconds = Math.floor(this.now() / 1000);
    const perRowUntil = await this.perRowUntilOf(workspaceId);
    // Each hour: its segments first (a position held by a segment and a per-row item is read from the segment,
    // the later write), then the per-row items written before segments, one cursor per shard (none for an
    // hour after the workspace's per-row marker).
    const open = (slice: HourSlice): RowCursor[] => [
      new SegmentCursor(
        new ShardCursor(this.client, this.segmentQuery(workspaceId, dataset, slice, nowSeconds)),
        slice,
        nowSeconds,
        this.batchSize,
        resumeAfter,
      ),
      ...Array.from(
        { length: slice.loMs <= perRowUntil ? EVENT_SHARDS : 0 },
        (_, shard) =>
          new ShardCursor(
            this.client,
            this.partitionQuery(workspaceId, dataset, slice, shard, nowSeconds, ['#sk', '#line']),
            resumeAfter,
          ),
      ),
    ];
    // The next hour's first pages are fetched while this hour is merged.
    let upcoming = open(slices[0]!);
    for (let h = 0; h < slices.length; h++) {
      const cursors = upcoming;
      if (h + 1 < slices.length) upcoming = open(slices[h + 1]!);
      let live = (await Promise.all(cursors.map(async (c) => ((await c.fill()) ? c : undefined)))).filter(
        (c): c is RowCursor => c !== undefined,
      );
      while (live.length > 0) {
        // The cursor with the smallest head, and the second smallest head: take from the first while below it.
        // Of two equal heads the first cursor's is read and the other's skipped.
        let min = live[0]!;
        let minHead = min.keys[min.index]!;
        let second: string | undefined;
        let tie: RowCursor | undefined;
        for (let i = 1; i < live.length; i++) {
          const cursor = live[i]!;
          const head = cursor.keys[cursor.index]!;
          if (head < minHead) {
            second = minHead;
            min = cursor;
            minHead = head;
            tie = undefined;
          } else if (head === minHead) {
            tie = cursor;
          } else if (second === undefined || head < second) {
            second = head;
          }
        }
        if (tie !== undefined) {
          const skipped = tie;
          skipped.index++;
          if (!(await skipped.fill())) live = live.filter((c) => c !== skipped);
          continue;
        }
        const { keys, lines } = min;
        let { index } = min;
        const room = this.batchSize - out.lines.length;
        const end = Math.min(keys.length, index + room);
        for (; index < end; index++) {
          const key = keys[index]!;
          if (second !== undefined && key >= second) break;
          out.lines.push(lines[index]!);
          out.keys.push(key);
          // The position starts with the recorded time: `<13 digits>#<id>`.
          out.recordedMs.push(Number(key.slice(0, 13)));
        }
        min.index = index;
        if (out.lines.length >= this.batchSize) {
          yield out;
          out = { lines: [], keys: [], recordedMs: [] };
        }
        if (!(await min.fill())) live = live.filter((c) => c !== min);
      }
    }
    if (out.lines.length > 0) yield out;
  }

  /**
   * {@inheritDoc EventSource.hasRowsAfter}
   * Each partition is asked for one item first; a page that holds only expired items is followed with larger
   * pages (×10, at most 1,000 items), so a long expired stretch costs a few Queries, not one per item.
   */
  async hasRowsAfter(
    workspaceId: string,
    dataset: EventDataset,
    afterMs: number,
    untilMs: number,
  ): Promise<boolean> {
    assertWorkspaceId(workspaceId);
    if (!(untilMs > afterMs)) return false;
    const nowSeconds = Math.floor(this.now() / 1000);
    const slices = EventLogReader.hours(afterMs, untilMs);
    const perRowUntil = await this.perRowUntilOf(workspaceId);
    for (let i = 0; i < slices.length; i += HAS_ROWS_HOURS_AT_ONCE) {
      const found = await Promise.all(
        slices
          .slice(i, i + HAS_ROWS_HOURS_AT_ONCE)
          .flatMap((slice) => [
            this.segmentsHaveRows(
              this.segmentQuery(workspaceId, dataset, slice, nowSeconds),
              slice,
              nowSeconds,
            ),
            ...Array.from({ length: slice.loMs <= perRowUntil ? EVENT_SHARDS : 0 }, (_, shard) =>
              this.partitionHasRows(
                this.partitionQuery(workspaceId, dataset, slice, shard, nowSeconds, ['#sk']),
              ),
            ),
          ]),
      );
      if (found.includes(true)) return true;
    }
    return false;
  }

  /** True when the Query returns at least one item, following pages that the expiry filter emptied. */
  private async partitionHasRows(input: QueryCommandInput): Promise<boolean> {
    let limit = HAS_ROWS_FIRST_LIMIT;
    let startKey: Item | undefined;
    do {
      const output = await this.client.send(
        new QueryCommand({ ...input, Limit: limit, ...(startKey ? { ExclusiveStartKey: startKey } : {}) }),
      );
      if ((output.Items?.length ?? 0) > 0) return true;
      startKey = output.LastEvaluatedKey;
      limit = Math.min(limit * 10, HAS_ROWS_MAX_LIMIT);
    } while (startKey);
    return false;
  }

  /**
   * True when a segment of the Query holds a row of the slice not expired at `nowSeconds` (pages of 1 segment
   * first, then larger).
   */
  private async segmentsHaveRows(
    input: QueryCommandInput,
    slice: HourSlice,
    nowSeconds: number,
  ): Promise<boolean> {
    let limit = HAS_ROWS_FIRST_LIMIT;
    let startKey: Item | undefined;
    do {
      const output = await this.client.send(
        new QueryCommand({ ...input, Limit: limit, ...(startKey ? { ExclusiveStartKey: startKey } : {}) }),
      );
      for (const item of output.Items ?? []) {
        if (liveRowsOf(item, slice.loMs, slice.hiMs, nowSeconds).length > 0) return true;
      }
      startKey = output.LastEvaluatedKey;
      limit = Math.min(limit * 10, SEGMENT_PAGE_LIMIT);
    } while (startKey);
    return false;
  }

  /** The number of rows in `(fromMs, toMs]` that have not expired, as {@link readWindow} reads them (for tests and tools). */
  async countWindow(
    workspaceId: string,
    dataset: EventDataset,
    fromMs: number,
    toMs: number,
  ): Promise<number> {
    let count = 0;
    for await (const page of this.readWindow(workspaceId, dataset, fromMs, toMs)) count += page.lines.length;
    return count;
  }

  /**
   * {@inheritDoc EventSource.readSubscribers} Order: by shard, then by subscriber id. A position is
   * `<shard>#<subscriberId>`.
   */
  async *readSubscribers(
    workspaceId: string,
    afterKey?: string,
  ): AsyncGenerator<SourcePage, void, undefined> {
    assertWorkspaceId(workspaceId);
    const tableName = resolveTableName(this.subscribersTable, 'subscribers');
    const separator = afterKey?.indexOf('#') ?? -1;
    const afterShard = afterKey !== undefined ? Number(afterKey.slice(0, separator)) : 0;
    if (afterKey !== undefined && !(separator > 0 && Number.isInteger(afterShard))) {
      throw new Error(`afterKey ${afterKey} is not a subscriber position`);
    }
    for (let shard = afterShard; shard < SUBSCRIBER_SHARDS; shard++) {
      const pk = subscriberPk(workspaceId, shard);
      const startKey =
        afterKey !== undefined && shard === afterShard
          ? { PK: { S: pk }, SK: { S: afterKey.slice(separator + 1) } }
          : undefined;
      const cursor = new ShardCursor(
        this.client,
        {
          TableName: tableName,
          KeyConditionExpression: '#pk = :pk',
          ExpressionAttributeNames: { '#pk': 'PK', '#sk': 'SK', '#line': 'line' },
          ExpressionAttributeValues: { ':pk': { S: pk } },
          ProjectionExpression: '#sk, #line',
          ConsistentRead: this.consistentRead,
          Limit: this.pageLimit,
        },
        undefined,
        startKey,
      );
      while (await cursor.fill()) {
        const items = cursor.items.slice(cursor.index);
        cursor.index = cursor.items.length;
        if (items.length > 0) {
          yield {
            lines: items.map((item) => item.line!.S!),
            keys: items.map((item) => `${shard}#${item.SK!.S!}`),
          };
        }
      }
    }
  }
}
