import { createHash } from 'node:crypto';
import { type Dataset, DUE_INDEX_SHARDS } from '@sluice/core';

/**
 * The keys of every control table item, as docs/internals.md fixes them. The API stores and the engine's
 * export state both build keys here, so the layout is written once.
 */

/** Name of the sparse global index of due destinations. */
export const DUE_INDEX_NAME = 'due';

/** How long run records are kept and listed. */
export const RUN_RETENTION_DAYS = 14;
const DAY_MS = 86_400_000;

/** `WS#<workspaceId>`: the partition of a workspace's item, destinations, cursors and leases. */
export function workspacePk(workspaceId: string): string {
  return `WS#${workspaceId}`;
}

/** Sort key of the workspace item. */
export const WORKSPACE_SK = 'WORKSPACE';

/** `KEY#<sha256 hex>`: the partition of one API key. */
export function apiKeyPk(keyHash: string): string {
  return `KEY#${keyHash}`;
}

/** Sort key of an API key item. */
export const API_KEY_SK = 'KEY';

/** `DEST#<destinationId>`: sort key of a destination item. */
export function destinationSk(destinationId: string): string {
  return `DEST#${destinationId}`;
}

/** `DEST#<destinationId>#CURSOR#`: the prefix of a destination's cursor items. */
export function cursorSkPrefix(destinationId: string): string {
  return `${destinationSk(destinationId)}#CURSOR#`;
}

/** `DEST#<destinationId>#CURSOR#<dataset>`: sort key of one dataset's cursor. */
export function cursorSk(destinationId: string, dataset: Dataset): string {
  return `${cursorSkPrefix(destinationId)}${dataset}`;
}

/** `DEST#<destinationId>#PROGRESS#`: the prefix of a destination's window progress items. */
export function progressSkPrefix(destinationId: string): string {
  return `${destinationSk(destinationId)}#PROGRESS#`;
}

/** `DEST#<destinationId>#PROGRESS#<dataset>#<window>`: sort key of one window's (or snapshot's) progress. */
export function progressSk(destinationId: string, dataset: Dataset, window: string): string {
  return `${progressSkPrefix(destinationId)}${dataset}#${window}`;
}

/** `DEST#<destinationId>#LEASE`: sort key of a destination's lease. */
export function leaseSk(destinationId: string): string {
  return `${destinationSk(destinationId)}#LEASE`;
}

/** `RUNS#<workspaceId>#<destinationId>`: the partition of a destination's run history. */
export function runsPk(workspaceId: string, destinationId: string): string {
  return `RUNS#${workspaceId}#${destinationId}`;
}

/** `RUN#<startedAt ISO>#<runId>`: sort key of one run, so a partition sorts by start time. */
export function runSk(startedAt: string, runId: string): string {
  return `RUN#${startedAt}#${runId}`;
}

/** The lowest run sort key still inside the retention window at `now`. */
export function oldestRunSk(now: Date): string {
  return `RUN#${new Date(now.getTime() - RUN_RETENTION_DAYS * DAY_MS).toISOString()}`;
}

/** TTL of a run record: epoch seconds, `startedAt` + 14 days. */
export function runExpiresAt(startedAt: string): number {
  return Math.floor((Date.parse(startedAt) + RUN_RETENTION_DAYS * DAY_MS) / 1000);
}

/** The due index shard of a destination, 0..DUE_INDEX_SHARDS-1, from the SHA-256 of its id. */
export function dueShard(destinationId: string): number {
  return createHash('sha256').update(destinationId).digest().readUInt32BE(0) % DUE_INDEX_SHARDS;
}

/** `DUE#<n>`: the due index partition of a destination. */
export function dueKey(destinationId: string): string {
  return `DUE#${dueShard(destinationId)}`;
}

/** Every due index partition, for the dispatcher's Query per shard. */
export function dueKeys(): string[] {
  return Array.from({ length: DUE_INDEX_SHARDS }, (_, n) => `DUE#${n}`);
}

/** `<nextRunAt ISO>#<workspaceId>#<destinationId>`: the due index sort key. */
export function dueAt(nextRunAt: string, workspaceId: string, destinationId: string): string {
  return `${nextRunAt}#${workspaceId}#${destinationId}`;
}

/**
 * The due index attributes a destination carries: both present only while it is enabled and has a
 * `nextRunAt`, so the index stays sparse. `undefined` means "remove them".
 */
export function dueAttributes(destination: {
  workspaceId: string;
  id: string;
  isEnabled: boolean;
  nextRunAt: string | null;
}): { dueKey: string; dueAt: string } | undefined {
  if (!destination.isEnabled || destination.nextRunAt === null) return undefined;
  return {
    dueKey: dueKey(destination.id),
    dueAt: dueAt(destination.nextRunAt, destination.workspaceId, destination.id),
  };
}

/**
 * True when an id can be used inside a key: non-empty, at most 200 characters, no `#` (the key separator)
 * and no control characters. A malformed id can never name an item, so stores treat it as not found.
 */
export function isKeySafeId(id: string): boolean {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are exactly what is refused
  return id.length > 0 && id.length <= 200 && !/[#\u0000-\u001f\u007f]/.test(id);
}
