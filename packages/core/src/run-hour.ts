import { createHash } from 'node:crypto';
import { type Dataset, type EventDataset, FREQUENCY_MS, type Frequency, isEventDataset } from './datasets.js';
import { FILE_EXTENSIONS, type FileFormat } from './file-format.js';
import type { InputIssue } from './errors.js';
import { withPrefix } from './layout.js';
import { runOffsetMs } from './slots.js';
import { EXPORT_LAG_MS, type Window } from './windows.js';

/**
 * The `run_hour` layout and chosen run times (`schedule`). Pure: no AWS SDK.
 *
 * ```
 * <prefix>/v1/schema_type=<dataset>/year=YYYY/month=MM/day=DD/hour=HH/
 *   <organization_id>_<dataset>_<YYYYMMDDTHHMMSSZ>_<job>.part-NNN.parquet      (.jsonl.gz for JSON lines)
 * <prefix>/_sluice/manifests/v1/schema_type=<dataset>/year=YYYY/month=MM/day=DD/hour=HH/
 *   <organization_id>_<dataset>_<YYYYMMDDTHHMMSSZ>_<job>.json                 (the window's manifest)
 * ```
 * The folders and the timestamp are the window's slot: its scheduled run, in UTC, which is its end plus
 * {@link RUN_HOUR_LEAD_MS} (every `run_hour` window ends five minutes before its run). The slot is a function
 * of the window alone, and the window's layout is stored with it when it is planned (like its format), so a
 * retry, a late run or a backfill rewrites the same names. `<job>` is the first 12 hex digits of SHA-256 over
 * `<exportId>:<timestamp>`; `<organization_id>` is the workspace whose rows the file holds.
 */

/** `layout` of a destination: `date` (the default) or `run_hour`. */
export const LAYOUTS = ['date', 'run_hour'] as const;
export type Layout = (typeof LAYOUTS)[number];

/** The frequencies a `run_hour` export can have. */
export const RUN_HOUR_FREQUENCIES: readonly Frequency[] = ['hourly', 'daily'];

/** Every `run_hour` window ends this long before its scheduled run (late carrier receipts). */
export const RUN_HOUR_LEAD_MS = 5 * 60_000;

/** At most this many lines go in one `run_hour` file (`date` files: `MAX_LINES_PER_FILE`). */
export const RUN_HOUR_MAX_LINES_PER_FILE = 100_000;

/** `schedule` of a destination: the chosen run time, UTC. `hour` only for `daily`. */
export interface Schedule {
  minute: number;
  hour?: number;
}

/** The layout of a stored destination or planned window: absent or unknown is `date`. */
export function layoutOf(value: { layout?: unknown } | undefined): Layout {
  return value?.layout === 'run_hour' ? 'run_hour' : 'date';
}

/**
 * The shift of a destination's window grid: 0 (the UTC grid) in the `date` layout, where the schedule only
 * chooses when runs happen; in `run_hour`, such that every window ends {@link RUN_HOUR_LEAD_MS} before a run.
 */
export function gridPhaseMs(destination: {
  id: string;
  frequency: Frequency;
  layout?: Layout;
  schedule?: Schedule | null;
}): number {
  if (layoutOf(destination) !== 'run_hour') return 0;
  const step = FREQUENCY_MS[destination.frequency];
  const offset = runOffsetMs(destination.frequency, destination.id, destination.schedule);
  return (((offset - RUN_HOUR_LEAD_MS) % step) + step) % step;
}

/**
 * The shift of a destination's grid and how long after a window ends it may be planned: two minutes
 * (`EXPORT_LAG_MS`); in `run_hour` five, so the run at a slot covers the window that just ended.
 */
export function gridTimingOf(destination: Parameters<typeof gridPhaseMs>[0]): {
  phaseMs: number;
  lagMs: number;
} {
  return {
    phaseMs: gridPhaseMs(destination),
    lagMs: layoutOf(destination) === 'run_hour' ? RUN_HOUR_LEAD_MS : EXPORT_LAG_MS,
  };
}

/** The scheduled run a `run_hour` window belongs to: its end plus the lead. */
export function runHourSlotMs(window: Window): number {
  return window.toMs + 1 + RUN_HOUR_LEAD_MS;
}

/** `YYYYMMDDTHHMMSSZ` of an instant, UTC. */
export function compactUtc(ms: number): string {
  return new Date(ms)
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}Z$/, 'Z');
}

/** `<job>`: the first 12 hex digits of SHA-256 over `<exportId>:<YYYYMMDDTHHMMSSZ of the slot>`. */
export function runHourJob(exportId: string, slotMs: number): string {
  return createHash('sha256')
    .update(`${exportId}:${compactUtc(slotMs)}`)
    .digest('hex')
    .slice(0, 12);
}

/** `schema_type=<dataset>/year=YYYY/month=MM/day=DD/hour=HH/` of a slot. */
function hivePath(dataset: EventDataset, slotMs: number): string {
  const iso = new Date(slotMs).toISOString();
  return `v1/schema_type=${dataset}/year=${iso.slice(0, 4)}/month=${iso.slice(5, 7)}/day=${iso.slice(8, 10)}/hour=${iso.slice(11, 13)}/`;
}

/** Who a `run_hour` file belongs to: the export (for `<job>`) and the organisation whose rows it holds. */
export interface RunHourOwner {
  exportId: string;
  organizationId: string;
}

/** `<organization_id>_<dataset>_<YYYYMMDDTHHMMSSZ>_<job>`: the stem of a window's files and manifest. */
function runHourStem(owner: RunHourOwner, dataset: EventDataset, window: Window): string {
  const slot = runHourSlotMs(window);
  return `${owner.organizationId}_${dataset}_${compactUtc(slot)}_${runHourJob(owner.exportId, slot)}`;
}

/** `part-000`, `part-001`, …: the part number of a `run_hour` file. */
export function partIndex(index: number): string {
  if (!Number.isInteger(index) || index < 0) throw new RangeError(`invalid part index ${index}`);
  return `part-${String(index).padStart(3, '0')}`;
}

/** The key of file `index` of a `run_hour` window. */
export function runHourFileKey(
  pathPrefix: string,
  dataset: EventDataset,
  window: Window,
  index: number,
  format: FileFormat,
  owner: RunHourOwner,
): string {
  const folder = hivePath(dataset, runHourSlotMs(window));
  return withPrefix(
    pathPrefix,
    `${folder}${runHourStem(owner, dataset, window)}.${partIndex(index)}${FILE_EXTENSIONS[format.format]}`,
  );
}

/**
 * The manifest of a `run_hour` window: under `_sluice/manifests/`, in the same Hive folders as its files
 * (outside `v1/`, so a crawler or a `**` glob over the data finds only data), named like its files.
 */
export function runHourManifestKey(
  pathPrefix: string,
  dataset: EventDataset,
  window: Window,
  owner: RunHourOwner,
): string {
  const folder = hivePath(dataset, runHourSlotMs(window));
  return withPrefix(pathPrefix, `_sluice/manifests/${folder}${runHourStem(owner, dataset, window)}.json`);
}

/**
 * The issues of a layout, frequency, schedule and datasets together (after defaults, or after a PATCH merged
 * with the stored values): `run_hour` takes `hourly` and `daily` and event datasets only; a schedule's minute
 * is 0–59, its hour 0–23 and only for `daily`; a schedule only for `hourly` and `daily`.
 */
export function scheduleIssues(input: {
  layout: Layout;
  frequency: Frequency;
  datasets: readonly Dataset[];
  schedule: Schedule | null | undefined;
}): InputIssue[] {
  const issues: InputIssue[] = [];
  if (input.layout === 'run_hour') {
    if (!RUN_HOUR_FREQUENCIES.includes(input.frequency)) {
      issues.push({
        path: 'frequency',
        message: `The run_hour layout runs hourly or daily, not ${input.frequency}.`,
        allowedValues: [...RUN_HOUR_FREQUENCIES],
      });
    }
    input.datasets.forEach((dataset, index) => {
      if (!isEventDataset(dataset)) {
        issues.push({
          path: `datasets[${index}]`,
          message: `The run_hour layout exports event datasets only, not ${dataset}.`,
        });
      }
    });
  }
  const schedule = input.schedule;
  if (schedule === null || schedule === undefined) return issues;
  if (!RUN_HOUR_FREQUENCIES.includes(input.frequency)) {
    issues.push({
      path: 'schedule',
      message: `A schedule is for hourly and daily exports, not ${input.frequency}.`,
    });
  }
  if (!Number.isInteger(schedule.minute) || schedule.minute < 0 || schedule.minute > 59) {
    issues.push({ path: 'schedule.minute', message: 'schedule.minute is a whole number from 0 to 59.' });
  }
  if (schedule.hour !== undefined) {
    if (input.frequency !== 'daily') {
      issues.push({ path: 'schedule.hour', message: 'schedule.hour is only for daily exports.' });
    } else if (!Number.isInteger(schedule.hour) || schedule.hour < 0 || schedule.hour > 23) {
      issues.push({ path: 'schedule.hour', message: 'schedule.hour is a whole number from 0 to 23.' });
    }
  }
  return issues;
}
