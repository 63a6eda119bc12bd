import type { EventDataset } from './datasets.js';
import { FILE_EXTENSIONS, type FileFormat, JSONL_GZIP } from './file-format.js';
import { type Window, windowDate } from './windows.js';

/**
 * File layout and names in the customer's bucket, exactly as the reference fixes them:
 *
 * ```
 * <prefix>/<dataset>/date=YYYY-MM-DD/<dataset>-<fromMs>-<toMs>-NNNN.jsonl.gz
 * <prefix>/subscribers/date=YYYY-MM-DD/subscribers-NNNN.jsonl.gz
 * <prefix>/subscribers/date=YYYY-MM-DD/_SUCCESS
 * ```
 * An export that includes child organisations puts each organisation's files of a window in its own
 * partition: `<prefix>/<dataset>/date=YYYY-MM-DD/organization_id=<ws>/<dataset>-<fromMs>-<toMs>-NNNN.jsonl.gz`.
 * Parquet files have the same names with `.parquet` in place of `.jsonl.gz`.
 * An empty prefix puts the dataset folders at the bucket root (no leading slash).
 */

/** At most this many lines go in one file. */
export const MAX_LINES_PER_FILE = 50_000;

/** Name of the marker written last, once a day's subscriber snapshot is complete. */
export const SUCCESS_MARKER = '_SUCCESS';

/** `0000`, `0001`, ...: the file index within a window or snapshot. */
export function fileIndex(index: number): string {
  if (!Number.isInteger(index) || index < 0) throw new RangeError(`invalid file index ${index}`);
  return String(index).padStart(4, '0');
}

/** Joins the path prefix and the rest of a key; `''` means the bucket root. */
export function withPrefix(pathPrefix: string, rest: string): string {
  const prefix = pathPrefix.replace(/^\/+|\/+$/g, '');
  return prefix === '' ? rest : `${prefix}/${rest}`;
}

/**
 * `organization_id=<ws>/`: the partition of one organisation's files in the `date` layout of an export that
 * includes child organisations (its windows were planned with organisations); '' otherwise.
 */
export function organizationFolder(organizationId: string | undefined): string {
  return organizationId === undefined ? '' : `organization_id=${organizationId}/`;
}

/**
 * `<prefix>/<dataset>/date=D/`: the folder of an event window's files; with `organizationId` (an export that
 * includes child organisations), `<prefix>/<dataset>/date=D/organization_id=<ws>/`.
 */
export function eventFolder(
  pathPrefix: string,
  dataset: EventDataset,
  window: Window,
  organizationId?: string,
): string {
  return withPrefix(
    pathPrefix,
    `${dataset}/date=${windowDate(window)}/${organizationFolder(organizationId)}`,
  );
}

/** The key of file `index` of an event window. */
export function eventFileKey(
  pathPrefix: string,
  dataset: EventDataset,
  window: Window,
  index: number,
  format: FileFormat = JSONL_GZIP,
  organizationId?: string,
): string {
  return `${eventFolder(pathPrefix, dataset, window, organizationId)}${dataset}-${window.fromMs}-${window.toMs}-${fileIndex(index)}${FILE_EXTENSIONS[format.format]}`;
}

/** `<prefix>/subscribers/date=D/`: the folder of a day's snapshot. */
export function snapshotFolder(pathPrefix: string, date: string): string {
  return withPrefix(pathPrefix, `subscribers/date=${date}/`);
}

/** The key of file `index` of a day's subscriber snapshot. */
export function snapshotFileKey(
  pathPrefix: string,
  date: string,
  index: number,
  format: FileFormat = JSONL_GZIP,
): string {
  return `${snapshotFolder(pathPrefix, date)}subscribers-${fileIndex(index)}${FILE_EXTENSIONS[format.format]}`;
}

/** The key of the `_SUCCESS` marker of a day's snapshot. */
export function snapshotSuccessKey(pathPrefix: string, date: string): string {
  return `${snapshotFolder(pathPrefix, date)}${SUCCESS_MARKER}`;
}
