/**
 * Object keys of the event archive (docs/internals.md, "Event archive"): one object per workspace, event
 * dataset and UTC hour of recorded time, `archive/<workspaceId>/<dataset>/date=YYYY-MM-DD/hour=HH.jsonl.gz`.
 * Keys of one dataset sort in time order, so a listing walks the hours in order.
 */
import type { EventDataset } from '@sluice/core';

/** One hour in milliseconds: the archive's object span. */
export const ARCHIVE_HOUR_MS = 3_600_000;

/** The prefix of every archive object. */
export const ARCHIVE_ROOT = 'archive/';

/** `archive/<workspaceId>/`: the prefix of a workspace's objects (and of any workspace whose id extends it with `/`). */
export function archiveWorkspacePrefix(workspaceId: string): string {
  return `${ARCHIVE_ROOT}${workspaceId}/`;
}

/** `archive/<workspaceId>/<dataset>/`: every object of one dataset of a workspace. */
export function archiveDatasetPrefix(workspaceId: string, dataset: EventDataset): string {
  return `${archiveWorkspacePrefix(workspaceId)}${dataset}/`;
}

/** The object of the UTC hour starting at `hourMs`. */
export function archiveHourKey(workspaceId: string, dataset: EventDataset, hourMs: number): string {
  const iso = new Date(hourMs).toISOString();
  return `${archiveDatasetPrefix(workspaceId, dataset)}date=${iso.slice(0, 10)}/hour=${iso.slice(11, 13)}.jsonl.gz`;
}

/** The hour start (epoch ms) named by an archive key, or undefined for a key of another shape. */
export function hourOfArchiveKey(key: string): number | undefined {
  const match = /date=(\d{4}-\d{2}-\d{2})\/hour=(\d{2})\.jsonl\.gz$/.exec(key);
  if (match === null) return undefined;
  const ms = Date.parse(`${match[1]}T${match[2]}:00:00Z`);
  return Number.isFinite(ms) ? ms : undefined;
}

/**
 * True when `key` is an hour object of exactly this workspace and dataset: its prefix, then exactly
 * `date=YYYY-MM-DD/hour=HH.jsonl.gz`. A listing of the prefix `archive/acme/` also returns the objects of a
 * workspace named `acme/email_events` (ids with `/` are refused since, but may exist): those are never its.
 */
export function isArchiveHourKeyOf(key: string, workspaceId: string, dataset: EventDataset): boolean {
  const hourMs = hourOfArchiveKey(key);
  return hourMs !== undefined && key === archiveHourKey(workspaceId, dataset, hourMs);
}

/** The start of the UTC hour holding `ms`. */
export function hourFloor(ms: number): number {
  return Math.floor(ms / ARCHIVE_HOUR_MS) * ARCHIVE_HOUR_MS;
}

/** The first hour start at or after `ms`. */
export function hourCeil(ms: number): number {
  return Math.ceil(ms / ARCHIVE_HOUR_MS) * ARCHIVE_HOUR_MS;
}

/**
 * The event log position of an archived line (`<recordedAtMs, 13 digits>#<id>`, the hot log's sort key), read
 * from its `recorded_at` and `id`: the archive stores the lines exactly as customers' files hold them.
 */
export function positionOfLine(line: string): { key: string; recordedMs: number } {
  const row = JSON.parse(line) as { id?: unknown; recorded_at?: unknown };
  const recordedMs = typeof row.recorded_at === 'string' ? Date.parse(row.recorded_at) : Number.NaN;
  if (typeof row.id !== 'string' || !Number.isFinite(recordedMs)) {
    throw new Error('An archived line has no id or recorded_at: the archive object is damaged');
  }
  return { key: `${String(recordedMs).padStart(13, '0')}#${row.id}`, recordedMs };
}
