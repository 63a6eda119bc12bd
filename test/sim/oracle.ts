/**
 * The oracle: the rules of "The export contract" (docs/internals.md) marked [oracle], checked from the bucket
 * and the simulation's own record ({@link Model}) only.
 */
import { createHash } from 'node:crypto';
import {
  EVENT_DATASETS,
  type EventDataset,
  EXPORT_FORMATS,
  type ExportFormat,
  FILE_EXTENSIONS,
  FREQUENCY_MS,
  type Frequency,
  type Layout,
} from '@sluice/core';
import type { BucketObjectView } from './bucket.js';
import type { Model, ModelExport, ModelRow } from './model.js';

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
  /** A `run_hour` key: its folders, organisation and job as the contract names them. */
  'name',
  /** `message_events`: one row per message and window, the last one recorded in it. */
  'current-row',
  /** What ingest says it did with each input (refused, ignored, emitted) matches the dataset's rules. */
  'ingest',
  /** An export's next run stays on its schedule slot (or its id's spread slot) after every run. */
  'slot',
  /**
   * Parent organisations (issue 27): a row is in its own organisation's files (`organization_id=` folder in
   * `date`, `<organization_id>_…` in `run_hour`), and a child's only for the time it was linked and listed.
   */
  'organization',
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
/** The `organization_id=<ws>/` folder of an export that includes children (`date` layout), when there is one. */
const ORGANIZATION = '(?:organization_id=([^/]+)/)?';
const DATA_KEY = new RegExp(
  `/(${DATASETS})/date=(\\d{4}-\\d{2}-\\d{2})/${ORGANIZATION}\\1-(\\d+)-(\\d+)-(\\d{4})(${EXTENSIONS})$`,
);
const MANIFEST_KEY = new RegExp(
  `/_sluice/manifests/(${DATASETS})/date=(\\d{4}-\\d{2}-\\d{2})/${ORGANIZATION}(\\d+)-(\\d+)\\.json$`,
);
/** `run_hour`: `v1/schema_type=<d>/year=/month=/day=/hour=/<organization_id>_<d>_<YYYYMMDDTHHMMSSZ>_<job>`. */
const RUN_HOUR_STEM =
  `v1/schema_type=(${DATASETS})/year=(\\d{4})/month=(\\d{2})/day=(\\d{2})/hour=(\\d{2})/` +
  `(.+)_\\1_(\\d{8}T\\d{6}Z)_([0-9a-f]{12})`;
const RUN_HOUR_DATA_KEY = new RegExp(`/${RUN_HOUR_STEM}\\.part-(\\d{3})(${EXTENSIONS})$`);
const RUN_HOUR_MANIFEST_KEY = new RegExp(`/_sluice/manifests/${RUN_HOUR_STEM}\\.json$`);
/** Every `run_hour` window ends this long before its slot (its scheduled run), which names its files. */
const RUN_HOUR_LEAD_MS = 5 * 60_000;

/** A data file's window, parsed from its key. */
export interface FileWindow {
  key: string;
  dataset: EventDataset;
  layout: Layout;
  fromMs: number;
  toMs: number;
  index: number;
  format: ExportFormat;
  /** The window's name within the export: `<dataset>/<from>-<to>`, or `<dataset>/<slot>` in `run_hour`. */
  window: string;
  /** What is wrong with the key itself (a name the contract does not give), if anything. */
  nameIssue?: string;
  /** The organisation the key names (`organization_id=` in `date`, absent when unpartitioned; `run_hour`: always). */
  organization?: string;
}

/** A window's name with its organisation: each organisation's file set of a window is its own. */
function windowOf(name: string, organization: string | undefined): string {
  return organization === undefined ? name : `${name}/${organization}`;
}

/** `YYYYMMDDTHHMMSSZ` as epoch ms. */
function compactMs(stamp: string): number {
  return Date.parse(
    `${stamp.slice(0, 4)}-${stamp.slice(4, 6)}-${stamp.slice(6, 8)}T${stamp.slice(9, 11)}:${stamp.slice(11, 13)}:${stamp.slice(13, 15)}Z`,
  );
}

/**
 * The frequency a `run_hour` window of `exp` whose slot is `slotMs` was cut on: of the `run_hour`
 * configurations it had, the one in force at the slot if the slot is on its schedule, else any whose schedule
 * the slot is on (a spread slot not seen yet counts as on it); undefined when the slot is on none.
 */
export function runHourFrequencyOf(exp: ModelExport, slotMs: number): Frequency | undefined {
  const onSlot = (config: ModelExport['configs'][number]) => {
    if (config.layout !== 'run_hour') return false;
    const offset = offsetOf(exp, config);
    const period = FREQUENCY_MS[config.frequency];
    // A spread slot not seen yet (no run has succeeded since): not checkable yet.
    return offset === undefined || (((slotMs - offset) % period) + period) % period === 0;
  };
  const inForce = [...exp.configs].reverse().find((config) => config.sinceMs <= slotMs);
  if (inForce !== undefined && onSlot(inForce)) return inForce.frequency;
  return exp.configs.find(onSlot)?.frequency;
}

/** The run offset of a configuration within its period: its schedule's, else the spread slot seen. */
export function offsetOf(exp: ModelExport, config: ModelExport['configs'][number]): number | undefined {
  const schedule = config.schedule;
  if (schedule === null) return exp.spreadOffsets.get(config.frequency);
  if (config.frequency === 'daily') return ((schedule.hour ?? 0) * 60 + schedule.minute) * 60_000;
  return (schedule.minute * 60_000) % FREQUENCY_MS[config.frequency];
}

export function parseDataKey(key: string, exp?: ModelExport): FileWindow | undefined {
  const match = DATA_KEY.exec(key);
  if (match) {
    const [, dataset, date, organization, from, to, index, extension] = match;
    const toMs = Number(to);
    return {
      key,
      dataset: dataset as EventDataset,
      layout: 'date',
      fromMs: Number(from),
      toMs,
      index: Number(index),
      format: FORMAT_OF_EXTENSION.get(extension!)!,
      window: windowOf(`${dataset}/${from}-${to}`, organization),
      ...(organization !== undefined ? { organization } : {}),
      ...(new Date(toMs).toISOString().slice(0, 10) !== date ? { nameIssue: 'wrong date folder' } : {}),
    };
  }
  const hour = RUN_HOUR_DATA_KEY.exec(key);
  if (!hour) return undefined;
  const [, dataset, year, month, day, hh, organization, stamp, job, part, extension] = hour;
  const slotMs = compactMs(stamp!);
  const toMs = slotMs - RUN_HOUR_LEAD_MS - 1;
  const frequency = exp === undefined ? undefined : runHourFrequencyOf(exp, slotMs);
  const issues: string[] = [];
  if (new Date(slotMs).toISOString().slice(0, 13) !== `${year}-${month}-${day}T${hh}`)
    issues.push('folders are not its slot');
  if (exp !== undefined) {
    const listed = (exp.children ?? []).map((entry) => entry.childId);
    if (organization !== exp.workspaceId && !listed.includes(organization!))
      issues.push(`organization ${organization}, neither ${exp.workspaceId} nor a child it listed`);
    const expected = createHash('sha256').update(`${exp.id}:${stamp}`).digest('hex').slice(0, 12);
    if (job !== expected) issues.push(`job ${job}, not ${expected}`);
  }
  return {
    key,
    dataset: dataset as EventDataset,
    layout: 'run_hour',
    // A slot on none of its schedules: the widest window, and the grid check names it.
    fromMs: toMs - FREQUENCY_MS[frequency ?? 'daily'],
    toMs,
    index: Number(part),
    format: FORMAT_OF_EXTENSION.get(extension!)!,
    window: windowOf(`${dataset}/${stamp}`, organization),
    organization: organization!,
    ...(issues.length > 0 ? { nameIssue: issues.join('; ') } : {}),
  };
}

/** A manifest key's window (as {@link FileWindow.window}) and the key prefix of its data files. */
function parseManifestKey(key: string): { window: string; dataset: EventDataset; files: string } | undefined {
  const match = MANIFEST_KEY.exec(key);
  if (match) {
    const [, dataset, date, organization, from, to] = match;
    const prefix = key.slice(0, match.index);
    const folder = organization === undefined ? '' : `organization_id=${organization}/`;
    return {
      window: windowOf(`${dataset}/${from}-${to}`, organization),
      dataset: dataset as EventDataset,
      files: `${prefix}/${dataset}/date=${date}/${folder}${dataset}-${from}-${to}-`,
    };
  }
  const hour = RUN_HOUR_MANIFEST_KEY.exec(key);
  if (!hour) return undefined;
  const prefix = key.slice(0, hour.index);
  const stem = key.slice(hour.index + '/_sluice/manifests'.length, -'.json'.length);
  return {
    window: windowOf(`${hour[1]}/${hour[7]}`, hour[6]),
    dataset: hour[1] as EventDataset,
    files: `${prefix}${stem}.part-`,
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
    const file = parseDataKey(key, exp);
    const manifest = parseManifestKey(key) !== undefined;
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
    // Windows by location: a move of the prefix leaves delivered windows where they are.
    const where = `${prefixOf(exp, key)}/${file.window}`;
    windows.set(where, [...(windows.get(where) ?? []), file]);
    // Grid: one whole cell of a frequency the export has had (`date`: on the UTC grid; `run_hour`: its slot
    // on one of the schedules it had); the key is the one the contract names. After a change to a coarser
    // frequency, planning finishes the coarsest grid the cursor lies on up to the new grid (`alignmentOf`, see
    // "Windows as delivered"): a cell of any frequency's grid between a finer and a coarser one it has had.
    if (file.layout === 'date') {
      const step = file.toMs - file.fromMs;
      const had = [...exp.frequencies].map((f) => FREQUENCY_MS[f]);
      const onGrid =
        Object.values(FREQUENCY_MS).includes(step) &&
        (file.fromMs + 1) % step === 0 &&
        (had.includes(step) || (had.some((s) => s < step) && had.some((s) => s > step)));
      // After a change from `run_hour` (a new shift), the first `date` window runs from the cursor, the end of a
      // `run_hour` window (five minutes before one of its slots), to the next point of the `date` grid
      // (docs/internals.md, "The run_hour layout and schedules").
      const afterRunHour =
        had.some((s) => (file.toMs + 1) % s === 0 && step < s) &&
        exp.configs.some((config) => config.layout === 'run_hour') &&
        runHourFrequencyOf(exp, file.fromMs + 1 + RUN_HOUR_LEAD_MS) !== undefined;
      if (!onGrid && !afterRunHour) {
        violate(
          'grid',
          `${key}: window ${iso(file.fromMs)}–${iso(file.toMs)} is no cell of ${[...exp.frequencies].join('/')}`,
        );
      }
    } else if (runHourFrequencyOf(exp, file.toMs + 1 + RUN_HOUR_LEAD_MS) === undefined) {
      violate('grid', `${key}: slot ${iso(file.toMs + 1 + RUN_HOUR_LEAD_MS)} is on none of its schedules`);
    }
    if (file.nameIssue !== undefined) violate('name', `${key}: ${file.nameIssue}`);
    // Each row: known, of this workspace (or a child it included then) and dataset, in its organisation's
    // files, recorded inside the window, after the start, once.
    for (const id of object.ids ?? []) {
      const row = model.rows.get(id);
      const own = row?.workspace === exp.workspace;
      if (row === undefined || row.dataset !== file.dataset || (!own && !isChildRow(exp, row))) {
        violate(
          'recorded-time',
          `${key}: row ${id} was never ingested into this workspace's ${file.dataset}`,
        );
        continue;
      }
      const issue = organizationIssue(model, exp, file, row);
      if (issue !== undefined) violateRow('organization', key, `row ${id} ${issue}`);
      if (!(row.recordedMs > file.fromMs && row.recordedMs <= file.toMs)) {
        violate(
          'recorded-time',
          `${key}: row ${id} recorded at ${iso(row.recordedMs)} is outside the window`,
        );
      }
      const runHourStepMs = file.layout === 'run_hour' ? file.toMs + 1 - file.fromMs : undefined;
      if (!mayDeliver(exp, file.dataset, row.recordedMs, runHourStepMs)) {
        violateRow(
          'before-start',
          key,
          `row ${id} recorded at ${iso(row.recordedMs)}, not after the export's or dataset's start ` +
            `(${startsOf(exp, file.dataset)}) and in no backfill's range`,
        );
      }
      // Once per location (a backfill after a move of the prefix delivers to the new one).
      const other = seen.get(`${prefixOf(exp, key)} ${id}`);
      if (other !== undefined) violateRow('exactly-once', key, `row ${id} is also in ${other}`);
      seen.set(`${prefixOf(exp, key)} ${id}`, key);
      if (row.key !== undefined && row.updatedMs !== undefined) {
        const later = laterInWindow(model, row, file);
        if (later !== undefined)
          violateRow('current-row', key, `${id} is not the message's last row of the window (${later} is)`);
      }
    }
  }
  // A current-row dataset: at most one row per message (project) per window, over the window's files.
  for (const [window, files] of windows) {
    const keys = new Map<string, number>();
    for (const f of files)
      for (const id of objects.get(f.key)?.ids ?? []) {
        const rowKey = model.rows.get(id)?.key;
        if (rowKey !== undefined) keys.set(rowKey, (keys.get(rowKey) ?? 0) + 1);
      }
    const twice = [...keys].filter(([, n]) => n > 1);
    if (twice.length > 0)
      violate(
        'current-row',
        `window ${window} holds ${twice.length} messages more than once (${twice[0]![0]})`,
      );
  }
  for (const { check, message, count } of rowViolations.values()) {
    violate(check, count > 1 ? `${message} (and ${count - 1} more rows)` : message);
  }
  // Files that disappeared.
  for (const key of history.rows.keys()) {
    if (prefixOf(exp, key) !== undefined && !objects.has(key)) violate('shrink', `${key} was deleted`);
  }
  // Formats: one per window, the one it was first written in, which the export had when it was planned.
  for (const [window, files] of windows) {
    const formats = new Set(files.map((file) => file.format));
    if (formats.size > 1) violate('format', `window ${window} has files in ${[...formats].join(' and ')}`);
    const first = history.firstFormat.get(window);
    const now = files[0]!.format;
    if (first === undefined) {
      const held = model.formatsDuring(exp, files[0]!.toMs + LAG_MS, nowMs);
      if (!held.has(now)) {
        violate(
          'format',
          `window ${window} was first written as ${now}; the export was ${[...held].join('/')}`,
        );
      }
      // The layout it was planned with: one the export had once the window ended (a retry or backfill of it
      // keeps it; the names of the other layout would deliver its rows twice, which 'exactly-once' names).
      const layouts = model.layoutsDuring(exp, files[0]!.toMs, nowMs);
      if (!layouts.has(files[0]!.layout)) {
        violate(
          'format',
          `window ${window} was written in the ${files[0]!.layout} layout; the export was ${[...layouts].join('/')}`,
        );
      }
      history.firstFormat.set(window, now);
    } else if (formats.has(first) === false || formats.size > 1) {
      violate('format', `window ${window} was first written as ${first}, now has ${[...formats].join('/')}`);
    }
  }
  return violations;
}

/** Whether `row` is of a workspace the export ever listed as a child (any other is never ingested into it). */
function isChildRow(exp: ModelExport, row: ModelRow): boolean {
  return (exp.children ?? []).some((entry) => entry.child === row.workspace);
}

/**
 * What is wrong with `row` in `file` for parent organisations: not in its own organisation's files (a
 * partitioned `date` file or a `run_hour` name naming another; an unpartitioned file holding a child's row),
 * or a child's row recorded while the child was not both linked and listed.
 */
function organizationIssue(
  model: Model,
  exp: ModelExport,
  file: FileWindow,
  row: ModelRow,
): string | undefined {
  const ownerId = row.workspace === exp.workspace ? exp.workspaceId : childIdOf(exp, row.workspace);
  const named = file.organization ?? exp.workspaceId;
  // A name of no organisation the export knows is the `name` check's.
  const known = named === exp.workspaceId || (exp.children ?? []).some((entry) => entry.childId === named);
  if (known && named !== ownerId) return `of ${ownerId} is in the files of ${named}`;
  if (!model.includesRowsOf(exp, row.workspace, row.recordedMs))
    return `of child ${ownerId} recorded at ${iso(row.recordedMs)}, when it was not both linked and listed`;
  return undefined;
}

function childIdOf(exp: ModelExport, workspace: number): string | undefined {
  return (exp.children ?? []).find((entry) => entry.child === workspace)?.childId;
}

/** Which of the export's prefixes a key is under (the longest), or undefined. */
function prefixOf(exp: ModelExport, key: string): string | undefined {
  return exp.prefixes.filter((prefix) => key.startsWith(`${prefix}/`)).sort((a, b) => b.length - a.length)[0];
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
  const manifest = parseManifestKey(key);
  if (!manifest) return [];
  return [...history.ids.keys()].filter((file) => file.startsWith(manifest.files));
}

/**
 * A `message_events` emission recorded in `file`'s window after `row` (or in the same millisecond with a later
 * `updated_at`): the window's row of the message, which `row` must then not be. Erased rows excluded.
 */
function laterInWindow(model: Model, row: ModelRow, file: FileWindow): string | undefined {
  for (const [id, other] of model.rowsOfKey(row.workspace, row.dataset, row.key!)) {
    if (other === row || other.erasedMs !== undefined) continue;
    if (other.recordedMs <= file.fromMs || other.recordedMs > file.toMs) continue;
    if (
      other.recordedMs > row.recordedMs ||
      (other.recordedMs === row.recordedMs && (other.updatedMs ?? 0) > (row.updatedMs ?? 0))
    )
      return id;
  }
  return undefined;
}

/** The checks of a settled bucket: each window's manifest lists exactly its files, with their SHA-256. */
export function checkManifests(exp: ModelExport, objects: Map<string, BucketObjectView>): Violation[] {
  const violations: Violation[] = [];
  const violate = (message: string) => violations.push({ check: 'manifest', exportRef: exp.ref, message });
  const files = new Map<string, FileWindow[]>();
  for (const key of objects.keys()) {
    const file = parseDataKey(key, exp);
    if (file) files.set(file.window, [...(files.get(file.window) ?? []), file]);
  }
  const manifests = new Set<string>();
  for (const [key, object] of objects) {
    const window = parseManifestKey(key)?.window;
    if (window === undefined) continue;
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
  const delivered = deliveredWindows(exp, objects);
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
      if (!model.includesRowsOf(exp, row.workspace, row.recordedMs) || row.dataset !== dataset || row.refused)
        continue;
      if (row.erasedMs !== undefined || row.lapsedMs !== undefined) continue;
      if (row.recordedMs <= fromMs || row.recordedMs > throughMs || delivered.has(id)) continue;
      if (!available(id, row.recordedMs) || superseded(model, row, delivered)) continue;
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
      `${dataset} since ${iso(Math.max(exp.dueFromMs, membership.addedMs))}`,
      dataset,
      Math.max(exp.dueFromMs, membership.addedMs),
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

/** Every row delivered, with the window of the file holding it. */
function deliveredWindows(exp: ModelExport, objects: Map<string, BucketObjectView>): Map<string, FileWindow> {
  const delivered = new Map<string, FileWindow>();
  for (const [key, object] of objects) {
    const file = parseDataKey(key, exp);
    if (file) for (const id of object.ids ?? []) delivered.set(id, file);
  }
  return delivered;
}

/**
 * Whether a `message_events` emission is not owed because a later one of the same message is delivered in a
 * window holding it (a window holds the message's last row recorded in it).
 */
function superseded(model: Model, row: ModelRow, delivered: Map<string, FileWindow>): boolean {
  if (row.key === undefined || row.updatedMs === undefined) return false;
  for (const [id, other] of model.rowsOfKey(row.workspace, row.dataset, row.key)) {
    const file = delivered.get(id);
    if (file === undefined || other === row) continue;
    const later =
      other.recordedMs > row.recordedMs ||
      (other.recordedMs === row.recordedMs && (other.updatedMs ?? 0) > row.updatedMs);
    if (later && row.recordedMs > file.fromMs && row.recordedMs <= file.toMs) return true;
  }
  return false;
}

/** Whether the contract lets this export deliver a row of `dataset` recorded at `recordedMs`. */
function mayDeliver(
  exp: ModelExport,
  dataset: EventDataset,
  recordedMs: number,
  runHourStepMs?: number,
): boolean {
  // A `run_hour` window is whole (docs/customer-buckets.md), also when the export changed to `run_hour` before its
  // first window went out: rows of up to two windows before the export's start may appear there (not owed), as in
  // an export created in `run_hour`. A dataset added later starts exactly in either layout.
  const startMs =
    runHourStepMs === undefined ? exp.startMs : Math.min(exp.startMs, exp.dueFromMs - 2 * runHourStepMs);
  const inMembership =
    recordedMs > startMs &&
    (exp.memberships.get(dataset) ?? []).some(
      (m) =>
        recordedMs > (m.addedMs === exp.startMs ? startMs : m.addedMs) &&
        (m.removedMs === undefined || recordedMs <= m.removedMs),
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
  const delivered = deliveredWindows(exp, objects);
  for (const dataset of model.currentDatasets(exp)) {
    const through = shown.exportedThrough[dataset];
    if (through === null || through === undefined) continue;
    const throughMs = Date.parse(through);
    if (throughMs > nowMs - LAG_MS)
      violate(`exportedThrough ${through} of ${dataset} is past the export limit`);
    const fromMs = Math.max(exp.dueFromMs, exp.memberships.get(dataset)!.at(-1)!.addedMs);
    let owed = 0;
    let example = '';
    for (const [id, row] of model.rows) {
      if (!model.includesRowsOf(exp, row.workspace, row.recordedMs) || row.dataset !== dataset || row.refused)
        continue;
      if (row.erasedMs !== undefined || row.lapsedMs !== undefined || delivered.has(id)) continue;
      if (row.recordedMs <= fromMs || row.recordedMs > throughMs) continue;
      if (!model.isAvailable(id, row.recordedMs, nowMs, retentionMs) || superseded(model, row, delivered))
        continue;
      owed += 1;
      example = `${id} recorded ${iso(row.recordedMs)}`;
    }
    if (owed > 0)
      violate(`${owed} rows of ${dataset} through exportedThrough ${through} are not delivered (${example})`);
  }
  let regular = 0;
  for (const [key, object] of objects) {
    const file = parseDataKey(key, exp);
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
