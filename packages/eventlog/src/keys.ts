/**
 * Keys of the event log and subscribers tables (docs/internals.md, "Event log items").
 *
 * Events: `PK = <workspaceId>#<dataset>#<yyyy-mm-ddThh>#<shard>`, `SK = <recordedAtMs, 13 digits>#<id>`.
 * Subscribers: `PK = <workspaceId>#<shard>`, `SK = <subscriberId>`.
 *
 * The shard is a hash of the id, so the same event (or subscriber) always lands on the same item and a
 * busy workspace spreads its writes over several partitions.
 */
import { type Dataset, InvalidInputError } from '@sluice/core';

/** Write shards per (workspace, dataset, hour) partition of the event log. */
export const EVENT_SHARDS = 4;

/** Write shards per workspace of the subscribers table. */
export const SUBSCRIBER_SHARDS = 4;

/** One hour, in milliseconds: the event log's partition span. */
export const HOUR_MS = 3_600_000;

/** The largest time the 13-digit sort key can hold (year 2286). */
export const MAX_RECORDED_MS = 9_999_999_999_999;

/** FNV-1a (32 bit) of a string's UTF-16 code units: cheap, stable, well spread for short ids. */
export function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/** The shard (0..shards-1) of an id. */
export function shardOf(id: string, shards: number): number {
  return fnv1a(id) % shards;
}

/** The last hour formatted by {@link hourOf}: ingest formats the same hour for a whole slice of rows. */
let lastHour = { startMs: Number.NaN, text: '' };

/** `yyyy-mm-ddThh` of an epoch-millisecond time, UTC. */
export function hourOf(ms: number): string {
  const startMs = Math.floor(ms / HOUR_MS) * HOUR_MS;
  if (startMs !== lastHour.startMs)
    lastHour = { startMs, text: new Date(startMs).toISOString().slice(0, 13) };
  return lastHour.text;
}

/** The start (epoch ms) of the UTC hour containing `ms`. */
export function hourStart(ms: number): number {
  return Math.floor(ms / HOUR_MS) * HOUR_MS;
}

/** 13-digit, zero-padded epoch milliseconds: the sort key prefix. */
export function padMs(ms: number): string {
  return String(ms).padStart(13, '0');
}

/** Event log partition key. */
export function eventPk(workspaceId: string, dataset: Dataset, hourStartMs: number, shard: number): string {
  return `${workspaceId}#${dataset}#${hourOf(hourStartMs)}#${shard}`;
}

/** Event log sort key. */
export function eventSk(recordedAtMs: number, id: string): string {
  return `${padMs(recordedAtMs)}#${id}`;
}

/** The recorded time encoded in an event sort key. */
export function recordedMsOfSk(sk: string): number {
  return Number(sk.slice(0, 13));
}

/**
 * Where a read of `(fromMs, toMs]` resumed after the position `afterKey` begins: at the millisecond of that
 * line, skipping through it; or at `fromMs`, without it, when the line was recorded at or before `fromMs` (a
 * window whose start moved after it was begun: every row left to read comes after the line). Throws when
 * `afterKey` is not a position or lies past the window.
 */
export function resumeFrom(
  fromMs: number,
  toMs: number,
  afterKey: string | undefined,
): { startMs: number; afterKey?: string } {
  if (afterKey === undefined) return { startMs: fromMs };
  const lineMs = recordedMsOfSk(afterKey);
  if (!(Number.isInteger(lineMs) && lineMs <= toMs)) {
    throw new Error(`afterKey ${afterKey} is not inside the window`);
  }
  return lineMs <= fromMs ? { startMs: fromMs } : { startMs: lineMs - 1, afterKey };
}

/** Subscribers partition key. */
export function subscriberPk(workspaceId: string, shard: number): string {
  return `${workspaceId}#${shard}`;
}

/**
 * Checks a workspace id before it goes into a key: 1 to 128 printable ASCII characters without `#`
 * (the key separator) or spaces.
 */
export function assertWorkspaceId(workspaceId: string): void {
  if (typeof workspaceId !== 'string' || !/^[\x21-\x22\x24-\x7e]{1,128}$/.test(workspaceId)) {
    throw new InvalidInputError('Invalid workspace id', [
      { path: 'workspaceId', message: 'must be 1 to 128 printable ASCII characters without "#" or spaces' },
    ]);
  }
}
