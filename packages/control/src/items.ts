import { type Dataset, DAY_MS } from '@sluice/core';

/**
 * The keys of every control table item, as docs/internals.md fixes them. The API stores and the engine's
 * export state both build keys here, so the layout is written once (the due index keys: `due-index.ts`).
 */

/** How long run records are kept and listed. */
export const RUN_RETENTION_DAYS = 14;

/** `WS#<workspaceId>`: the partition of a workspace's item, destinations, cursors and leases. */
export function workspacePk(workspaceId: string): string {
  return `WS#${workspaceId}`;
}

/** Sort key of the workspace item. */
export const WORKSPACE_SK = 'WORKSPACE';

/** Sort key of the workspace's count of data exports (`exports`), kept by creates and deletes. */
export const EXPORT_COUNT_SK = 'EXPORT_COUNT';

/** `KEY#<sha256 hex>`: the partition of one API key. */
export function apiKeyPk(keyHash: string): string {
  return `KEY#${keyHash}`;
}

/** Sort key of an API key item. */
export const API_KEY_SK = 'KEY';

/** `APIKEY#`: the prefix of a workspace's pointers to its API keys. */
export const API_KEY_INDEX_SK_PREFIX = 'APIKEY#';

/** `APIKEY#<keyId>`: sort key, in the workspace's partition, of the pointer to one API key (its hash). */
export function apiKeyIndexSk(keyId: string): string {
  return `${API_KEY_INDEX_SK_PREFIX}${keyId}`;
}

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

/**
 * True when an id can be used inside a key: non-empty, at most 200 characters, no `#` (the key separator)
 * and no control characters. A malformed id can never name an item, so stores treat it as not found.
 */
export function isKeySafeId(id: string): boolean {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are exactly what is refused
  return id.length > 0 && id.length <= 200 && !/[#\u0000-\u001f\u007f]/.test(id);
}

/** Sort key, in a workspace's partition, of its organisation state: `parentId` (a child), `childCount` (a parent). */
export const ORG_SK = 'ORG';

/** `CHILD#`: the prefix of a parent's child links. */
export const CHILD_LINK_SK_PREFIX = 'CHILD#';

/** `CHILD#<childId>#<linkedAt ISO>#<nonce>`: sort key, in the parent's partition, of one link to a child. */
export function childLinkSk(childId: string, linkedAt: string, nonce: string): string {
  return `${CHILD_LINK_SK_PREFIX}${childId}#${linkedAt}#${nonce}`;
}
