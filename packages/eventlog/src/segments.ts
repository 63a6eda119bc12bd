/**
 * Segments: the event log's rows stored compressed, many to an item (docs/internals.md, "Event log items").
 *
 * The rows of one ingest call for one workspace, dataset and UTC hour, in sort-key order, are cut into segments
 * of at most {@link MAX_SEGMENT_SPAN_MS} of recorded time and {@link MAX_SEGMENT_RAW_BYTES} of text, each
 * compressed (brotli) into one item of the hour's segment partition:
 * `PK = <workspaceId>#<dataset>#<hour>#seg`, `SK = <firstMs, 13 digits>#<lastMs, 13 digits>#<written id>`,
 * `rows` (binary), `lastMs`, `count`, `expiresAt` (the last row's: recorded + retention, epoch seconds).
 * The written id (`<written ms, 13 digits><8 hex>`) orders segments by when they were written: where two
 * segments hold the same position (an import written twice with the same `recorded_at`), the later one's line
 * is read, as the later Put of a per-row item would have won.
 *
 * A segment's text is, for each row, its position (`<recordedAtMs, 13 digits>#<id>`, the per-row item's sort
 * key) and its line, each followed by a newline (a serialized line never holds a raw newline).
 *
 * A segment is never changed, only replaced whole by erasure ({@link eraseFromSegments}: one conditional
 * PutItem or DeleteItem of the same key), so a reader sees it before or after, never half rewritten.
 */
import { randomBytes } from 'node:crypto';
import { brotliCompressSync, brotliDecompressSync, constants } from 'node:zlib';
import {
  type AttributeValue,
  ConditionalCheckFailedException,
  DeleteItemCommand,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  type WriteRequest,
} from '@aws-sdk/client-dynamodb';
import type { Dataset } from '@sluice/core';
import { HOUR_MS, hourOf, padMs } from './keys.js';

type Item = Record<string, AttributeValue>;

/** The longest stretch of recorded time one segment holds: a reader looks this far back for segments. */
export const MAX_SEGMENT_SPAN_MS = 60_000;
/**
 * The most text (positions and lines) one segment holds before compression: even rows that do not compress fit
 * a DynamoDB item (400 KB) with its keys. A single row is never cut (ingest refuses lines above 350,000 bytes).
 */
export const MAX_SEGMENT_RAW_BYTES = 350_000;
/** Brotli's quality: measured by `npm run bench` (bench/segments.ts) as the best price for its CPU. */
export const SEGMENT_BROTLI_QUALITY = 6;
/** Times an erasure reads a segment again when another rewrite changed it first. */
const ERASE_ATTEMPTS = 5;

/** The segment partition of one (workspace, dataset, hour). */
export function segmentPk(workspaceId: string, dataset: Dataset, hourStartMs: number): string {
  return `${workspaceId}#${dataset}#${hourOf(hourStartMs)}#seg`;
}

/** One row of a segment: its position (`<recordedAtMs, 13 digits>#<id>`) and its line. */
export interface SegmentRow {
  key: string;
  line: string;
}

/** Compresses rows (in position order) into a segment's `rows` attribute. */
export function encodeSegment(rows: readonly SegmentRow[]): Uint8Array {
  let text = '';
  for (const row of rows) text += `${row.key}\n${row.line}\n`;
  return brotliCompressSync(text, {
    params: {
      [constants.BROTLI_PARAM_QUALITY]: SEGMENT_BROTLI_QUALITY,
      [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
      [constants.BROTLI_PARAM_SIZE_HINT]: text.length,
    },
  });
}

/** The rows of a segment's `rows` attribute, in position order. */
export function decodeSegment(bytes: Uint8Array): SegmentRow[] {
  const text = brotliDecompressSync(bytes).toString('utf8');
  const rows: SegmentRow[] = [];
  let start = 0;
  while (start < text.length) {
    const keyEnd = text.indexOf('\n', start);
    const lineEnd = text.indexOf('\n', keyEnd + 1);
    rows.push({ key: text.slice(start, keyEnd), line: text.slice(keyEnd + 1, lineEnd) });
    start = lineEnd + 1;
  }
  return rows;
}

/** The recorded time (epoch ms) of a position. */
export const msOfKey = (key: string): number => Number(key.slice(0, 13));

/**
 * The segment items of rows of one workspace and dataset (any hours, positions unique), as PutRequests: the
 * rows sorted by position, grouped by hour, cut at {@link MAX_SEGMENT_SPAN_MS} and {@link MAX_SEGMENT_RAW_BYTES}.
 */
export function segmentPutRequests(
  workspaceId: string,
  dataset: Dataset,
  rows: readonly SegmentRow[],
  expiresAtOf: (recordedMs: number) => number,
  writtenMs: number,
): WriteRequest[] {
  const sorted = [...rows].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  const requests: WriteRequest[] = [];
  const writtenId = `${padMs(writtenMs)}${randomBytes(4).toString('hex')}`;
  let part: SegmentRow[] = [];
  let partBytes = 0;
  const flush = () => {
    if (part.length === 0) return;
    const firstMs = msOfKey(part[0]!.key);
    const lastMs = msOfKey(part[part.length - 1]!.key);
    requests.push({
      PutRequest: {
        Item: {
          PK: { S: segmentPk(workspaceId, dataset, Math.floor(firstMs / HOUR_MS) * HOUR_MS) },
          // The part's number keeps two parts of one call apart (they may share first and last times).
          SK: {
            S: `${padMs(firstMs)}#${padMs(lastMs)}#${writtenId}${String(requests.length).padStart(4, '0')}`,
          },
          rows: { B: encodeSegment(part) },
          lastMs: { N: String(lastMs) },
          count: { N: String(part.length) },
          expiresAt: { N: String(expiresAtOf(lastMs)) },
        },
      },
    });
    part = [];
    partBytes = 0;
  };
  for (const row of sorted) {
    const ms = msOfKey(row.key);
    const bytes = row.key.length + Buffer.byteLength(row.line) + 2;
    const first = part[0];
    if (
      first !== undefined &&
      (Math.floor(ms / HOUR_MS) !== Math.floor(msOfKey(first.key) / HOUR_MS) ||
        ms - msOfKey(first.key) > MAX_SEGMENT_SPAN_MS ||
        partBytes + bytes > MAX_SEGMENT_RAW_BYTES)
    ) {
      flush();
    }
    part.push(row);
    partBytes += bytes;
  }
  flush();
  return requests;
}

/** The written id of a segment's sort key: later writes sort higher. */
export const writtenIdOf = (sk: string): string => sk.slice(28);

/**
 * The rows a reader keeps of a segment item: positions in `[loMs, hiMs]`, after `skipThrough` (when given),
 * not expired at `nowSeconds` (a row expires `retention` after it was recorded; the item's `expiresAt` is its
 * last row's, so each row's is `expiresAt` less the seconds between it and the last row).
 */
export function liveRowsOf(
  item: Item,
  loMs: number,
  hiMs: number,
  nowSeconds: number,
  skipThrough?: string,
): SegmentRow[] {
  const lastSeconds = Math.floor(Number(item.lastMs!.N) / 1000);
  const expiresAt = Number(item.expiresAt?.N ?? Number.POSITIVE_INFINITY);
  return decodeSegment(item.rows!.B!).filter((row) => {
    const ms = msOfKey(row.key);
    if (ms < loMs || ms > hiMs) return false;
    if (skipThrough !== undefined && row.key <= skipThrough) return false;
    return expiresAt - (lastSeconds - Math.floor(ms / 1000)) >= nowSeconds;
  });
}

/**
 * Removes the rows whose line matches from every segment of one partition: each segment holding one is replaced
 * by one without them (deleted when none is left), conditional on it being unchanged since it was read (read
 * again otherwise). Returns how many rows were removed.
 */
export async function eraseFromSegments(
  client: DynamoDBClient,
  tableName: string,
  pk: string,
  matches: (line: string) => boolean,
): Promise<number> {
  let removed = 0;
  let startKey: Item | undefined;
  do {
    const page = await client.send(
      new QueryCommand({
        TableName: tableName,
        KeyConditionExpression: '#pk = :pk',
        ExpressionAttributeNames: { '#pk': 'PK' },
        ExpressionAttributeValues: { ':pk': { S: pk } },
        Limit: 100,
        ...(startKey ? { ExclusiveStartKey: startKey } : {}),
      }),
    );
    startKey = page.LastEvaluatedKey;
    for (const found of page.Items ?? []) {
      let item: Item | undefined = found;
      for (let attempt = 1; item !== undefined; attempt++) {
        const rows = decodeSegment(item.rows!.B!);
        const kept = rows.filter((row) => !matches(row.line));
        if (kept.length === rows.length) break;
        try {
          const condition = {
            ConditionExpression: '#rows = :rows',
            ExpressionAttributeNames: { '#rows': 'rows' },
            ExpressionAttributeValues: { ':rows': item.rows! },
          };
          if (kept.length === 0) {
            await client.send(
              new DeleteItemCommand({
                TableName: tableName,
                Key: { PK: item.PK!, SK: item.SK! },
                ...condition,
              }),
            );
          } else {
            const rewritten = {
              ...item,
              rows: { B: encodeSegment(kept) },
              count: { N: String(kept.length) },
            };
            await client.send(new PutItemCommand({ TableName: tableName, Item: rewritten, ...condition }));
          }
          removed += rows.length - kept.length;
          break;
        } catch (error) {
          if (!(error instanceof ConditionalCheckFailedException) || attempt >= ERASE_ATTEMPTS) throw error;
          item = await readSegment(client, tableName, item);
        }
      }
    }
  } while (startKey);
  return removed;
}

/** The segment item of the same key, read again (consistent), or undefined when it is gone. */
async function readSegment(client: DynamoDBClient, tableName: string, item: Item): Promise<Item | undefined> {
  const output = await client.send(
    new GetItemCommand({ TableName: tableName, Key: { PK: item.PK!, SK: item.SK! }, ConsistentRead: true }),
  );
  return output.Item;
}
