/**
 * Reading the event log back in recorded-time order.
 *
 * A window `(fromMs, toMs]` spans one or more hour partitions, each written in `EVENT_SHARDS` shards. The reader
 * walks the hours in order; inside an hour it queries every shard (Query pages, `SK BETWEEN`, projecting only
 * `SK` and `line`, each shard's next page fetched while the current one is merged) and merges the shards by
 * sort key, which is `<recordedAtMs>#<id>`: recorded time, ties broken by id. Memory holds at most two pages
 * per shard plus one output page, whatever the window's size.
 *
 * Lines are taken from the low-level `{ S }` attribute as they are: no unmarshalling, no re-serializing.
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
  SUBSCRIBER_SHARDS,
  subscriberPk,
} from './keys.js';
import type { EventSource, SourcePage } from './source.js';

type Item = Record<string, AttributeValue>;

/** Options of {@link EventLogReader}. */
export interface EventLogReaderOptions {
  /** @default the module-level client */
  client?: DynamoDBClient;
  /** @default env `SLUICE_EVENTS_TABLE` */
  eventsTable?: string;
  /** @default env `SLUICE_SUBSCRIBERS_TABLE` */
  subscribersTable?: string;
  /** Items per Query page. @default none: DynamoDB's 1 MB pages */
  pageLimit?: number;
  /** Lines per yielded page of {@link EventLogReader.readWindow}. @default 1000 */
  batchSize?: number;
  /**
   * Strongly consistent reads (twice the cost). Exports trail real time by two minutes, so eventually
   * consistent reads see every row of a window. @default false
   */
  consistentRead?: boolean;
}

/** Hours queried at once by {@link EventLogReader.hasRowsAfter}. */
const HAS_ROWS_HOURS_AT_ONCE = 6;

/** One shard's pages of one hour, the next page prefetched while the current one is consumed. */
class ShardCursor {
  items: Item[] = [];
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
    }
    return true;
  }

  /** The sort key of the current item (call after `fill()` returned true). */
  head(): string {
    return this.items[this.index]!.SK!.S!;
  }
}

/** Reads the event log and the subscribers table. The DynamoDB implementation of {@link EventSource}. */
export class EventLogReader implements EventSource {
  private readonly client: DynamoDBClient;
  private readonly eventsTable: string | undefined;
  private readonly subscribersTable: string | undefined;
  private readonly pageLimit: number | undefined;
  private readonly batchSize: number;
  private readonly consistentRead: boolean;

  constructor(options: EventLogReaderOptions = {}) {
    this.client = options.client ?? defaultEventLogClient();
    this.eventsTable = options.eventsTable;
    this.subscribersTable = options.subscribersTable;
    this.pageLimit = options.pageLimit;
    this.batchSize = options.batchSize ?? 1000;
    this.consistentRead = options.consistentRead ?? false;
  }

  /** The Query of one (hour, shard) partition over recorded times `[loMs, hiMs]`. */
  private partitionQuery(
    workspaceId: string,
    dataset: EventDataset,
    hourMs: number,
    shard: number,
    loMs: number,
    hiMs: number,
  ): QueryCommandInput {
    return {
      TableName: resolveTableName(this.eventsTable, 'events'),
      KeyConditionExpression: '#pk = :pk AND #sk BETWEEN :lo AND :hi',
      ExpressionAttributeNames: { '#pk': 'PK', '#sk': 'SK', '#line': 'line' },
      ExpressionAttributeValues: {
        ':pk': { S: eventPk(workspaceId, dataset, hourMs, shard) },
        // `<13 digits>` sorts before every `<13 digits>#<id>`; `$` sorts right after `#`.
        ':lo': { S: padMs(loMs) },
        ':hi': { S: `${padMs(hiMs)}$` },
      },
      ProjectionExpression: '#sk, #line',
      ConsistentRead: this.consistentRead,
      ...(this.pageLimit ? { Limit: this.pageLimit } : {}),
    };
  }

  /** The (hour, lo, hi) slices of `(fromMs, toMs]`, in order. */
  private static hours(fromMs: number, toMs: number): { hourMs: number; loMs: number; hiMs: number }[] {
    const slices: { hourMs: number; loMs: number; hiMs: number }[] = [];
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
  ): AsyncGenerator<SourcePage, void, undefined> {
    assertWorkspaceId(workspaceId);
    // A resumed read starts at the millisecond of the last line written and skips through that line.
    const afterMs = afterKey !== undefined ? Number(afterKey.slice(0, 13)) - 1 : undefined;
    if (afterMs !== undefined && !(Number.isInteger(afterMs) && afterMs >= fromMs && afterMs < toMs)) {
      throw new Error(`afterKey ${afterKey} is not inside the window`);
    }
    const startMs = afterMs ?? fromMs;
    if (!(toMs > startMs)) return;
    let out: SourcePage = { lines: [], keys: [] };
    const slices = EventLogReader.hours(startMs, toMs);
    const open = ({ hourMs, loMs, hiMs }: { hourMs: number; loMs: number; hiMs: number }) =>
      Array.from(
        { length: EVENT_SHARDS },
        (_, shard) =>
          new ShardCursor(
            this.client,
            this.partitionQuery(workspaceId, dataset, hourMs, shard, loMs, hiMs),
            afterKey,
          ),
      );
    // The next hour's first pages are fetched while this hour is merged.
    let upcoming = open(slices[0]!);
    for (let h = 0; h < slices.length; h++) {
      const cursors = upcoming;
      if (h + 1 < slices.length) upcoming = open(slices[h + 1]!);
      let live = (await Promise.all(cursors.map(async (c) => ((await c.fill()) ? c : undefined)))).filter(
        (c): c is ShardCursor => c !== undefined,
      );
      while (live.length > 0) {
        // The shard with the smallest head, and the second smallest head: take from the first while below it.
        let min = live[0]!;
        let minHead = min.head();
        let second: string | undefined;
        for (let i = 1; i < live.length; i++) {
          const head = live[i]!.head();
          if (head < minHead) {
            second = minHead;
            min = live[i]!;
            minHead = head;
          } else if (second === undefined || head < second) {
            second = head;
          }
        }
        const { items } = min;
        let { index } = min;
        const room = this.batchSize - out.lines.length;
        const end = Math.min(items.length, index + room);
        for (; index < end; index++) {
          const key = items[index]!.SK!.S!;
          if (second !== undefined && key >= second) break;
          out.lines.push(items[index]!.line!.S!);
          out.keys.push(key);
        }
        min.index = index;
        if (out.lines.length >= this.batchSize) {
          yield out;
          out = { lines: [], keys: [] };
        }
        if (!(await min.fill())) live = live.filter((c) => c !== min);
      }
    }
    if (out.lines.length > 0) yield out;
  }

  /** {@inheritDoc EventSource.hasRowsAfter} */
  async hasRowsAfter(
    workspaceId: string,
    dataset: EventDataset,
    afterMs: number,
    untilMs: number,
  ): Promise<boolean> {
    assertWorkspaceId(workspaceId);
    if (!(untilMs > afterMs)) return false;
    const slices = EventLogReader.hours(afterMs, untilMs);
    for (let i = 0; i < slices.length; i += HAS_ROWS_HOURS_AT_ONCE) {
      const queries = slices.slice(i, i + HAS_ROWS_HOURS_AT_ONCE).flatMap(({ hourMs, loMs, hiMs }) =>
        Array.from({ length: EVENT_SHARDS }, (_, shard) => {
          const input = this.partitionQuery(workspaceId, dataset, hourMs, shard, loMs, hiMs);
          return this.client.send(
            new QueryCommand({
              ...input,
              Limit: 1,
              ProjectionExpression: '#sk',
              ExpressionAttributeNames: { '#pk': 'PK', '#sk': 'SK' },
            }),
          );
        }),
      );
      const outputs = await Promise.all(queries);
      if (outputs.some((output) => (output.Items?.length ?? 0) > 0)) return true;
    }
    return false;
  }

  /** The number of rows in `(fromMs, toMs]` (Select COUNT per partition; for tests and tools). */
  async countWindow(
    workspaceId: string,
    dataset: EventDataset,
    fromMs: number,
    toMs: number,
  ): Promise<number> {
    assertWorkspaceId(workspaceId);
    if (!(toMs > fromMs)) return 0;
    let count = 0;
    for (const { hourMs, loMs, hiMs } of EventLogReader.hours(fromMs, toMs)) {
      const counts = await Promise.all(
        Array.from({ length: EVENT_SHARDS }, async (_, shard) => {
          const { ProjectionExpression: _projection, ...input } = this.partitionQuery(
            workspaceId,
            dataset,
            hourMs,
            shard,
            loMs,
            hiMs,
          );
          let total = 0;
          let startKey: Item | undefined;
          do {
            const output = await this.client.send(
              new QueryCommand({
                ...input,
                ExpressionAttributeNames: { '#pk': 'PK', '#sk': 'SK' },
                Select: 'COUNT',
                ...(startKey ? { ExclusiveStartKey: startKey } : {}),
              }),
            );
            total += output.Count ?? 0;
            startKey = output.LastEvaluatedKey;
          } while (startKey);
          return total;
        }),
      );
      for (const c of counts) count += c;
    }
    return count;
  }

  /**
   * {@inheritDoc EventSource.readSubscribers} Order: by shard, then by subscriber id. A position is
   * `<shard>#<subscriberId>`.
   */
  async *readSubscribers(workspaceId: string, afterKey?: string): AsyncGenerator<SourcePage, void, undefined> {
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
          ...(this.pageLimit ? { Limit: this.pageLimit } : {}),
        },
        undefined,
        startKey,
      );
      while (await cursor.fill()) {
        const items = cursor.items.slice(cursor.index);
        cursor.index = cursor.items.length;
        if (items.length > 0) {
          yield { lines: items.map((item) => item.line!.S!), keys: items.map((item) => `${shard}#${item.SK!.S!}`) };
        }
      }
    }
  }
}
