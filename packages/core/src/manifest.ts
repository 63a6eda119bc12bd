import type { Dataset, EventDataset } from './datasets.js';
import { SCHEMA_VERSION } from './datasets.js';
import { organizationFolder, withPrefix } from './layout.js';
import { type Window, windowDate } from './windows.js';

/**
 * Run manifests: what a window (or a day's subscriber snapshot) wrote, so a loader can check that it has
 * every file of a window before it reads any. Written after the window's files and before the cursor moves:
 *
 * ```
 * <prefix>/_sluice/manifests/<dataset>/date=YYYY-MM-DD/<fromMs>-<toMs>.json   (event windows)
 * <prefix>/subscribers/date=YYYY-MM-DD/_SUCCESS                              (the day's snapshot)
 * ```
 * The content is a pure function of the files written (no time of the attempt), so a retried window writes
 * the same bytes. A window without rows writes no file and no manifest.
 */

/** The version of the manifest document itself. */
export const MANIFEST_VERSION = 1;

/** One file of a window, as the manifest lists it. */
export interface ManifestFile {
  /** The full object key, path prefix included. */
  key: string;
  rows: number;
  /** Bytes of the object as stored. */
  bytes: number;
  /** Lowercase hex SHA-256 of the object's bytes. */
  sha256: string;
}

/** The manifest document (snake_case, like the rows). */
export interface Manifest {
  manifest_version: typeof MANIFEST_VERSION;
  dataset: Dataset;
  /** An event window (`from_ms` exclusive, `to_ms` inclusive) or a snapshot's day (no bounds). */
  window: { date: string; from_ms?: number; to_ms?: number };
  schema_version: number;
  /** The file format: `jsonl` (gzipped JSON lines) or another format the destination chose. */
  format: string;
  /** `run_hour` windows only: the layout and the window's slot (its scheduled run, ISO), which name its folders. */
  layout?: 'run_hour';
  slot?: string;
  /** An export that includes child organisations: the organisation whose file set this is. */
  organization_id?: string;
  /** Totals over `files`. */
  rows: number;
  bytes: number;
  /** In file-number order. */
  files: ManifestFile[];
}

/**
 * `<prefix>/_sluice/manifests/<dataset>/date=D/<fromMs>-<toMs>.json`: the manifest of an event window; with
 * `organizationId` (an export that includes child organisations), one per organisation's file set, under
 * `…/date=D/organization_id=<ws>/<fromMs>-<toMs>.json`.
 */
export function manifestKey(
  pathPrefix: string,
  dataset: EventDataset,
  window: Window,
  organizationId?: string,
): string {
  return withPrefix(
    pathPrefix,
    `_sluice/manifests/${dataset}/date=${windowDate(window)}/${organizationFolder(organizationId)}${window.fromMs}-${window.toMs}.json`,
  );
}

/**
 * The manifest's name of a destination's format: `jsonl.gz` (the stored value of gzipped JSON lines) is
 * `jsonl`; any other format is named as it is stored. @default `jsonl` when the destination has none
 */
export function manifestFormat(format: string | undefined): string {
  if (format === undefined || format === '' || format === 'jsonl.gz') return 'jsonl';
  return format;
}

/** What {@link buildManifest} needs: the window or the day, and the files in file-number order. */
export type ManifestInput = {
  format: string | undefined;
  files: readonly ManifestFile[];
  /** `run_hour` windows: the layout and the slot (epoch ms). */
  layout?: 'run_hour';
  slotMs?: number;
  /** An export that includes child organisations: the organisation whose file set this is. */
  organizationId?: string;
} & ({ dataset: EventDataset; window: Window } | { dataset: 'subscribers'; date: string });

/** The manifest of a window or a day's snapshot (deterministic: the same files give the same document). */
export function buildManifest(input: ManifestInput): Manifest {
  const window =
    'window' in input
      ? { date: windowDate(input.window), from_ms: input.window.fromMs, to_ms: input.window.toMs }
      : { date: input.date };
  const files = input.files.map(({ key, rows, bytes, sha256 }) => ({ key, rows, bytes, sha256 }));
  return {
    manifest_version: MANIFEST_VERSION,
    dataset: input.dataset,
    window,
    schema_version: SCHEMA_VERSION,
    format: manifestFormat(input.format),
    ...(input.layout === 'run_hour' && input.slotMs !== undefined
      ? { layout: input.layout, slot: new Date(input.slotMs).toISOString() }
      : {}),
    ...(input.organizationId !== undefined ? { organization_id: input.organizationId } : {}),
    rows: files.reduce((sum, file) => sum + file.rows, 0),
    bytes: files.reduce((sum, file) => sum + file.bytes, 0),
    files,
  };
}

/** The bytes of a manifest as written: pretty-printed JSON with a final newline. */
export function serializeManifest(manifest: Manifest): string {
  return `${JSON.stringify(manifest, null, 2)}\n`;
}
