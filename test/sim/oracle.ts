/**
 * The oracle: the rules of "The export contract" (docs/internals.md) marked [oracle], checked from the bucket
 * and the simulation's own record ({@link Model}) only.
 */
import {
  EVENT_DATASETS,
  type EventDataset,
  EXPORT_FORMATS,
  type ExportFormat,
  FILE_EXTENSIONS,
  FREQUENCY_MS,
} from '@sluice/core';
import type { BucketObjectView } from './bucket.js';
import type { Model, ModelExport } from './model.js';

/** The oracle's checks, as `known-defects.ts` names them. */
export const CHECKS = [
  'grid',
  'recorded-time',
  'format',
  'before-start',
  'exactly-once',
  'shrink',
  'manifest',
  'caught-up',
  'erased',
  'totals',
  'archived',
  'same-bytes',
] as const;
export type Check = (typeof CHECKS)[number];

export interface Violation {
  check: Check;
  /** The export's simulation number. */
  exportRef: number;
  message: string;
  /** The backfill whose rows are missing, and their dataset (`caught-up` only). */
  backfillId?: string;
  dataset?: EventDataset;
}

/** How far behind real time an export may be: the two-minute lag of the contract. */
export const LAG_MS = 2 * 60_000;

const FORMAT_OF_EXTENSION = new Map<string, ExportFormat>(
  EXPORT_FORMATS.map((format) => [FILE_EXTENSIONS[format], format]),
);
const EXTENSIONS = EXPORT_FORMATS.map((format) => FILE_EXTENSIONS[format].replace(/\./g, '\\.')).join('|');
const DATASETS = EVENT_DATASETS.join('|');
const DATA_KEY = new RegExp(
  `/(${DATASETS})/date=(\\d{4}-\\d{2}-\\d{2})/\\1-(\\d+)-(\\d+)-(\\d{4})(${EXTENSIONS})$`,
);
const MANIFEST_KEY = new RegExp(
  `/_sluice/manifests/(${DATASETS})/date=(\\d{4}-\\d{2}-\\d{2})/(\\d+)-(\\d+)\\.json$`,
);

/** A data file's window, parsed from its key. */
interface FileWindow {
  key: string;
  dataset: EventDataset;
  date: string;
  fromMs: number;
  toMs: number;
  index: number;
  format: ExportFormat;
  window: string;
}

function parseDataKey(key: string): FileWindow | undefined {
  const match = DATA_KEY.exec(key);
  if (!match) return undefined;
  const [, dataset, date, from, to, index, extension] = match;
  return {
    key,
    dataset: dataset as EventDataset,
    date: date!,
    fromMs: Number(from),
    toMs: Number(to),
    index: Number(index),
    format: FORMAT_OF_EXTENSION.get(extension!)!,
    window: `${dataset}/${from}-${to}`,
  };
}

/** What the oracle remembers of the bucket between steps: it never forgets a file or a row count. */
export class BucketHistory {
  /** Largest row count seen per data file or manifest. */
  readonly rows = new Map<string, number>();
  /** The row ids of each data file's version with the largest count (an erasure may take some away). */
  readonly ids = new Map<string, readonly string[]>();
  /** The ETag each object had at the last step: a changed one was written since. */
  readonly etags = new Map<string, string>();
  /** Each data file's rows (ids in order) and SHA-256 as last read: the same rows must give the same bytes. */
  readonly contents = new Map<string, { rows: string; sha256: string }>();
  /** The format each window was first written in, by `<export prefix>/<window>` (the bucket holds every export). */
  readonly firstFormat = new Map<string, ExportFormat>();
}

/** The oracle's per-step checks of one export's objects. */
export function checkStep(
  model: Model,
  exp: ModelExport,
  objects: Map<string, BucketObjectView>,
  history: BucketHistory,
  nowMs: number,
): Violation[] {
  const violations: Violation[] = [];
  const violate = (check: Check, message: string) => violations.push({ check, exportRef: exp.ref, message });
  // Row violations are counted per file and check, with the first row as the example.
  const rowViolations = new Map<string, { check: Check; message: string; count: number }>();
  const violateRow = (check: Check, key: string, message: string) => {
    const entry = rowViolations.get(`${check} ${key}`);
    if (entry) entry.count += 1;
    else rowViolations.set(`${check} ${key}`, { check, message: `${key}: ${message}`, count: 1 });
  };
  const seen = new Map<string, string>();
  const windows = new Map<string, FileWindow[]>();

  for (const [key, object] of objects) {
    const file = parseDataKey(key);
    const manifest = MANIFEST_KEY.test(key);
    // Nothing shrinks: rows of a data file or a manifest.
    const rows = file
      ? (object.ids?.length ?? 0)
      : manifest
        ? Number((object.json as { rows?: number }).rows)
        : undefined;
    if (rows !== undefined) {
      const before = history.rows.get(key);
      // Rows erased since may leave a file or manifest written again; no other row may.
      const erased = erasedRowsOf(model, history, file ? [key] : manifestFilesOf(key, history));
      if (before !== undefined && rows < before - erased) {
        violate(
          'shrink',
          `${key} went from ${before} rows to ${rows}${erased > 0 ? ` (${erased} erased)` : ''}`,
        );
      }
      if (before === undefined || rows >= before) {
        history.rows.set(key, rows);
        if (file) history.ids.set(key, object.ids ?? []);
      }
    }
    const written = history.etags.get(key) !== object.etag;
    history.etags.set(key, object.etag);
    if (!file) continue;
    // A window written again (a retry, a backfill, from the archive or the hot log) with the same rows in the
    // same format is the same bytes.
    const rowsKey = (object.ids ?? []).join(',');
    const earlier = history.contents.get(key);
    if (written && earlier !== undefined && earlier.rows === rowsKey && earlier.sha256 !== object.sha256) {
      violate('same-bytes', `${key} was written again with the same rows and other bytes`);
    }
    history.contents.set(key, { rows: rowsKey, sha256: object.sha256 });
    // Erased rows are in no file written after the erasure (files delivered before are the customer's).
    if (written) {
      const erased = (object.ids ?? []).filter((id) => model.rows.get(id)?.erasedMs !== undefined);
      if (erased.length > 0) {
        violate(
          'erased',
          `${key} was written after the erasure of ${erased.length} of its rows (${erased[0]})`,
        );
      }
    }
    windows.set(file.window, [...(windows.get(file.window) ?? []), file]);
    // Grid: one whole cell of a frequency the export has had; the date folder is the window's day.
    const step = file.toMs - file.fromMs;
    const onGrid = [...exp.frequencies].some(
      (f) => FREQUENCY_MS[f] === step && (file.fromMs + 1) % step === 0,
    );
    if (!onGrid) {
      violate(
        'grid',
        `${key}: window ${iso(file.fromMs)}–${iso(file.toMs)} is no cell of ${[...exp.frequencies].join('/')}`,
      );
    }
    if (new Date(file.toMs).toISOString().slice(0, 10) !== file.date)
      violate('grid', `${key}: wrong date folder`);
    // Each row: known, of this workspace and dataset, recorded inside the window, after the start, once.
    for (const id of object.ids ?? []) {
      const row = model.rows.get(id);
      if (row === undefined || row.workspace !== exp.workspace || row.dataset !== file.dataset) {
        violate(
          'recorded-time',
          `${key}: row ${id} was never ingested into this workspace's ${file.dataset}`,
        );
        continue;
      }
      if (!(row.recordedMs > file.fromMs && row.recordedMs <= file.toMs)) {
        violate(
          'recorded-time',
          `${key}: row ${id} recorded at ${iso(row.recordedMs)} is outside the window`,
        );
      }
      if (!mayDeliver(exp, file.dataset, row.recordedMs)) {
        violateRow(
          'before-start',
          key,
          `row ${id} recorded at ${iso(row.recordedMs)}, not after the export's or dataset's start ` +
            `(${startsOf(exp, file.dataset)}) and in no backfill's range`,
        );
      }
      const other = seen.get(id);
      if (other !== undefined) violateRow('exactly-once', key, `row ${id} is also in ${other}`);
      seen.set(id, key);
    }
  }
  for (const { check, message, count } of rowViolations.values()) {
    violate(check, count > 1 ? `${message} (and ${count - 1} more rows)` : message);
  }
  // Files that disappeared.
  for (const key of history.rows.keys()) {
    if (key.startsWith(`${exp.prefix}/`) && !objects.has(key)) violate('shrink', `${key} was deleted`);
  }
  // Formats: one per window, the one it was first written in, which the export had when it was planned.
  for (const [window, files] of windows) {
    const formats = new Set(files.map((file) => file.format));
    if (formats.size > 1) violate('format', `window ${window} has files in ${[...formats].join(' and ')}`);
    const first = history.firstFormat.get(`${exp.prefix}/${window}`);
    const now = files[0]!.format;
    if (first === undefined) {
      const held = model.formatsDuring(exp, files[0]!.toMs + LAG_MS, nowMs);
      if (!held.has(now)) {
        violate(
          'format',
          `window ${window} was first written as ${now}; the export was ${[...held].join('/')}`,
        );
      }
      history.firstFormat.set(`${exp.prefix}/${window}`, now);
    } else if (formats.has(first) === false || formats.size > 1) {
      violate('format', `window ${window} was first written as ${first}, now has ${[...formats].join('/')}`);
    }
  }
  return violations;
}

/** The rows of `keys` (data files, as the history last kept them) erased since. */
function erasedRowsOf(model: Model, history: BucketHistory, keys: readonly string[]): number {
  let erased = 0;
  for (const key of keys) {
    for (const id of history.ids.get(key) ?? []) if (model.rows.get(id)?.erasedMs !== undefined) erased += 1;
  }
  return erased;
}

/** The data files the history knows of the window of a manifest key. */
function manifestFilesOf(key: string, history: BucketHistory): string[] {
  const match = MANIFEST_KEY.exec(key);
  if (!match) return [];
  const prefix = key.slice(0, match.index);
  const [, dataset, date, from, to] = match;
  const start = `${prefix}/${dataset}/date=${date}/${dataset}-${from}-${to}-`;
  return [...history.ids.keys()].filter((file) => file.startsWith(start));
}

/** The checks of a settled bucket: each window's manifest lists exactly its files, with their SHA-256. */
export function checkManifests(exp: ModelExport, objects: Map<string, BucketObjectView>): Violation[] {
  const violations: Violation[] = [];
  const violate = (message: string) => violations.push({ check: 'manifest', exportRef: exp.ref, message });
  const files = new Map<string, FileWindow[]>();
  for (const key of objects.keys()) {
    const file = parseDataKey(key);
    if (file) files.set(file.window, [...(files.get(file.window) ?? []), file]);
  }
  const manifests = new Set<string>();
  for (const [key, object] of objects) {
    const match = MANIFEST_KEY.exec(key);
    if (!match) continue;
    const window = `${match[1]}/${match[3]}-${match[4]}`;
    manifests.add(window);
    const doc = object.json as {
      format?: string;
      rows?: number;
      files?: { key: string; rows: number; bytes: number; sha256: string }[];
    };
    const listed = doc.files ?? [];
    const present = (files.get(window) ?? []).sort((a, b) => a.index - b.index);
    if (listed.map((f) => f.key).join() !== present.map((f) => f.key).join()) {
      violate(
        `${key} lists [${listed.map((f) => f.key).join(', ')}], the bucket has [${present.map((f) => f.key).join(', ')}]`,
      );
    }
    for (const entry of listed) {
      const actual = objects.get(entry.key);
      if (actual === undefined) continue;
      if (
        actual.sha256 !== entry.sha256 ||
        actual.bytes !== entry.bytes ||
        (actual.ids?.length ?? 0) !== entry.rows
      ) {
        violate(`${key}: ${entry.key} is not the file it lists (sha256, bytes or rows differ)`);
      }
    }
    if (listed.reduce((sum, f) => sum + f.rows, 0) !== doc.rows)
      violate(`${key}: rows is not the sum of its files`);
    if (present[0] && doc.format !== present[0].format)
      violate(`${key}: format ${doc.format}, files ${present[0].format}`);
  }
  for (const [window, list] of files) {
    const rows = list.reduce((sum, file) => sum + (objects.get(file.key)?.ids?.length ?? 0), 0);
    if (rows > 0 && !manifests.has(window)) violate(`window ${window} has ${rows} rows and no manifest`);
  }
  return violations;
}

/** The rows an export must have delivered once it has caught up, that are not in its files. */
export function missingRows(
  model: Model,
  exp: ModelExport,
  objects: Map<string, BucketObjectView>,
  nowMs: number,
  retentionMs: number,
  backfillReported: (backfillId: string) => boolean,
): Violation[] {
  if (exp.deleted || !exp.enabled) return [];
  const delivered = new Set<string>();
  for (const object of objects.values()) for (const id of object.ids ?? []) delivered.add(id);
  const available = (id: string, recordedMs: number) => model.isAvailable(id, recordedMs, nowMs, retentionMs);
  const missing = new Map<string, number>();
  const examples = new Map<string, string>();
  const backfillOf = new Map<string, { id: string; dataset: EventDataset }>();
  const expect = (
    why: string,
    dataset: EventDataset,
    fromMs: number,
    throughMs: number,
    backfillId?: string,
  ) => {
    if (backfillId !== undefined) backfillOf.set(why, { id: backfillId, dataset });
    for (const [id, row] of model.rows) {
      if (row.workspace !== exp.workspace || row.dataset !== dataset || row.refused) continue;
      if (row.erasedMs !== undefined || row.lapsedMs !== undefined) continue;
      if (row.recordedMs <= fromMs || row.recordedMs > throughMs || delivered.has(id)) continue;
      if (!available(id, row.recordedMs)) continue;
      missing.set(why, (missing.get(why) ?? 0) + 1);
      if (!examples.has(why)) {
        examples.set(
          why,
          `${id} recorded ${iso(row.recordedMs)}${model.archived.has(id) ? ', archived' : ''}`,
        );
      }
    }
  };
  const step = FREQUENCY_MS[exp.frequency];
  for (const dataset of model.currentDatasets(exp)) {
    const membership = exp.memberships.get(dataset)!.at(-1)!;
    expect(
      `${dataset} since ${iso(Math.max(exp.startMs, membership.addedMs))}`,
      dataset,
      Math.max(exp.startMs, membership.addedMs),
      nowMs - LAG_MS - step,
    );
  }
  for (const backfill of exp.backfills) {
    if (backfill.cancelled || backfillReported(backfill.id)) continue;
    for (const dataset of backfill.datasets) {
      const membership = exp.memberships.get(dataset)?.at(-1);
      if (
        membership === undefined ||
        membership.removedMs !== undefined ||
        membership.addedMs > backfill.createdMs
      )
        continue;
      expect(
        `backfill ${backfill.id} of ${dataset}`,
        dataset,
        backfill.fromMs - 1,
        Math.min(backfill.toMs - 1, backfill.createdMs - LAG_MS - FREQUENCY_MS[backfill.frequency]),
        backfill.id,
      );
    }
  }
  return [...missing].map(([why, count]) => ({
    check: 'caught-up' as const,
    exportRef: exp.ref,
    message: `${count} available rows not delivered after the settling ticks: ${why} (${examples.get(why)})`,
    ...(backfillOf.has(why)
      ? { backfillId: backfillOf.get(why)!.id, dataset: backfillOf.get(why)!.dataset }
      : {}),
  }));
}

/** Whether the contract lets this export deliver a row of `dataset` recorded at `recordedMs`. */
function mayDeliver(exp: ModelExport, dataset: EventDataset, recordedMs: number): boolean {
  const inMembership =
    recordedMs > exp.startMs &&
    (exp.memberships.get(dataset) ?? []).some(
      (m) => recordedMs > m.addedMs && (m.removedMs === undefined || recordedMs <= m.removedMs),
    );
  if (inMembership) return true;
  return inBackfillCells(exp, dataset, recordedMs);
}

/** Whether a backfill asked for `dataset` and its grid cells hold `recordedMs`. */
function inBackfillCells(exp: ModelExport, dataset: EventDataset, recordedMs: number): boolean {
  // A backfill delivers the grid cells holding its range.
  return exp.backfills.some((b) => {
    if (!b.datasets.includes(dataset)) return false;
    const step = FREQUENCY_MS[b.frequency];
    const from = Math.floor(b.fromMs / step) * step;
    const to = Math.ceil(b.toMs / step) * step;
    return recordedMs >= from && recordedMs < to;
  });
}

function startsOf(exp: ModelExport, dataset: EventDataset): string {
  const added = (exp.memberships.get(dataset) ?? []).map((m) => iso(m.addedMs)).join(', ');
  return `start ${iso(exp.startMs)}, added ${added}`;
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** What the API shows of an export: `exportedThrough` per dataset and `totalRowsExported`. */
export interface ShownTotals {
  exportedThrough: Record<string, string | null>;
  totalRowsExported: number;
}

/**
 * `exportedThrough` and `totalRowsExported` agree with the bucket: every row the regular export owes through a
 * dataset's `exportedThrough` (never later than the export limit) is delivered, and `totalRowsExported` counts
 * at least the rows delivered that only the regular export writes (outside every backfill's cells; a window
 * written again after a retry or a change may count twice, so it is a lower bound).
 */
export function checkTotals(
  model: Model,
  exp: ModelExport,
  objects: Map<string, BucketObjectView>,
  shown: ShownTotals,
  nowMs: number,
  retentionMs: number,
): Violation[] {
  const violations: Violation[] = [];
  const violate = (message: string) => violations.push({ check: 'totals', exportRef: exp.ref, message });
  const delivered = new Set<string>();
  for (const object of objects.values()) for (const id of object.ids ?? []) delivered.add(id);
  for (const dataset of model.currentDatasets(exp)) {
    const through = shown.exportedThrough[dataset];
    if (through === null || through === undefined) continue;
    const throughMs = Date.parse(through);
    if (throughMs > nowMs - LAG_MS)
      violate(`exportedThrough ${through} of ${dataset} is past the export limit`);
    const fromMs = Math.max(exp.startMs, exp.memberships.get(dataset)!.at(-1)!.addedMs);
    let owed = 0;
    let example = '';
    for (const [id, row] of model.rows) {
      if (row.workspace !== exp.workspace || row.dataset !== dataset || row.refused) continue;
      if (row.erasedMs !== undefined || row.lapsedMs !== undefined || delivered.has(id)) continue;
      if (row.recordedMs <= fromMs || row.recordedMs > throughMs) continue;
      if (!model.isAvailable(id, row.recordedMs, nowMs, retentionMs)) continue;
      owed += 1;
      example = `${id} recorded ${iso(row.recordedMs)}`;
    }
    if (owed > 0)
      violate(`${owed} rows of ${dataset} through exportedThrough ${through} are not delivered (${example})`);
  }
  let regular = 0;
  for (const [key, object] of objects) {
    const file = parseDataKey(key);
    if (!file) continue;
    for (const id of object.ids ?? []) {
      const row = model.rows.get(id);
      if (row !== undefined && !inBackfillCells(exp, file.dataset, row.recordedMs)) regular += 1;
    }
  }
  if (shown.totalRowsExported < regular) {
    violate(
      `totalRowsExported is ${shown.totalRowsExported}; the regular export alone delivered ${regular} rows`,
    );
  }
  return violations;
}
