import type { EventDataset, Frequency } from './datasets.js';
import { DAY_MS, gridExportLimit, gridPointAtOrBefore, gridStartOf, gridStepMs } from './windows.js';

/**
 * Backfills (issue 13): a chosen range of recorded time, or the whole history, exported on demand on the same
 * UTC grid of windows as the regular export, so a row both export lands in a file of the same name with the
 * same content. Pure: the ranges, chunks and progress arithmetic; the stores and the engine keep the state.
 */

/** The statuses of a backfill. `queued` and `running` are active; the others are final. */
export const BACKFILL_STATUSES = ['queued', 'running', 'succeeded', 'failed', 'cancelled'] as const;
export type BackfillStatus = (typeof BACKFILL_STATUSES)[number];

/** True while a backfill still has work (or may take it up): queued or running. */
export function isActiveBackfill(status: BackfillStatus): boolean {
  return status === 'queued' || status === 'running';
}

/** The longest range one backfill request may name, and the size of a full-history backfill's chunks. */
export const MAX_BACKFILL_RANGE_MS = 7 * DAY_MS;

/** A destination may start at most one full-history backfill in this long. */
export const FULL_HISTORY_INTERVAL_MS = 30 * DAY_MS;

/** A chunk that failed is retried this many times (with backoff) before the backfill fails. */
export const MAX_BACKFILL_CHUNK_ATTEMPTS = 5;

/** The hours of an event dataset the event archive holds: `(startMs, throughMs]` of recorded time. */
export interface ArchivedSpan {
  startMs: number;
  throughMs: number;
}

/**
 * The earliest recorded time an export can still read: the hot event log's retention horizon, or the event
 * archive's start when the archive reaches that horizon (no hour lost between them). An archive that stopped
 * before the horizon is not used: the rows between them are gone. The one place that decides (the engine's
 * `availableFromMs` is the same on the grid).
 */
export function earliestAvailableMs(nowMs: number, eventRetentionMs: number, archive?: ArchivedSpan): number {
  const hotHorizon = nowMs - eventRetentionMs;
  if (archive === undefined || archive.throughMs <= hotHorizon) return hotHorizon;
  return Math.min(hotHorizon, archive.startMs);
}

/** A backfill's range on the grid: windows `(fromMs, toMs]`, cut into chunks of at most seven days. */
export interface BackfillRange {
  /** A grid point: the start (exclusive) of the first window. */
  fromMs: number;
  /** A grid point: the end (inclusive) of the last window; never after the export limit at planning time. */
  toMs: number;
  /** The grid step (the destination's frequency) the windows are cut at. */
  stepMs: number;
}

/**
 * The grid range holding every row recorded in `[fromMs, toMs)`: from the start of the cell holding
 * `fromMs` to the end of the cell holding `toMs - 1`, clamped to the export limit at `nowMs` (whole cells
 * older than the lag, as the regular export). `toMs` equals `fromMs` when nothing is left. `grid`: the shift and
 * lag of a `run_hour` export's grid (the engine's `currentGrid`).
 */
export function backfillRange(
  fromMs: number,
  toMs: number,
  frequency: Frequency,
  nowMs: number,
  grid: { phaseMs?: number; lagMs?: number } = {},
): BackfillRange {
  const stepMs = gridStepMs(frequency);
  const phaseMs = grid.phaseMs ?? 0;
  const start = gridStartOf(fromMs, stepMs, phaseMs);
  const end = Math.min(
    gridPointAtOrBefore(toMs + stepMs - 2, stepMs, phaseMs),
    gridExportLimit(nowMs, frequency, phaseMs, grid.lagMs),
  );
  return { fromMs: start, toMs: Math.max(start, end), stepMs };
}

/** The number of grid windows of `(fromMs, toMs]` (both grid points). */
export function windowCount(fromMs: number, toMs: number, stepMs: number): number {
  return Math.max(0, Math.round((toMs - fromMs) / stepMs));
}

/**
 * The windows of `range` done: those through `doneThroughMs` (the committed position) and those the run's
 * writers have finished since, each writer's span from its start through the end of its last finished window
 * (`reached`: span start to that end, both grid points). Overlaps count once. Pure.
 */
export function windowsDoneOf(
  range: BackfillRange,
  doneThroughMs: number,
  reached: Readonly<Record<string, number>> = {},
): number {
  const spans = [{ fromMs: range.fromMs, toMs: doneThroughMs }];
  for (const [from, through] of Object.entries(reached)) spans.push({ fromMs: Number(from), toMs: through });
  spans.sort((a, b) => a.fromMs - b.fromMs);
  let windows = 0;
  let coveredMs = range.fromMs;
  for (const span of spans) {
    const fromMs = Math.max(span.fromMs, coveredMs);
    const toMs = Math.min(span.toMs, range.toMs);
    if (toMs > fromMs) {
      windows += windowCount(fromMs, toMs, range.stepMs);
      coveredMs = toMs;
    }
  }
  return windows;
}

/** The chunks of a range: consecutive `(fromMs, toMs]` of at most seven days each (every grid step divides it). */
export function backfillChunks(range: BackfillRange): { fromMs: number; toMs: number }[] {
  const chunks: { fromMs: number; toMs: number }[] = [];
  for (let from = range.fromMs; from < range.toMs; from += MAX_BACKFILL_RANGE_MS) {
    chunks.push({ fromMs: from, toMs: Math.min(from + MAX_BACKFILL_RANGE_MS, range.toMs) });
  }
  return chunks;
}

/** The end of the chunk holding `doneThroughMs` (the next position a dataset works towards). */
export function chunkEndAfter(range: BackfillRange, doneThroughMs: number): number {
  const index = Math.floor((doneThroughMs - range.fromMs) / MAX_BACKFILL_RANGE_MS);
  return Math.min(range.fromMs + (index + 1) * MAX_BACKFILL_RANGE_MS, range.toMs);
}

/** When a failed chunk is tried again: 30 s, doubling per attempt, at most 30 minutes. */
export function backfillRetryDelayMs(attempts: number): number {
  return Math.min(30_000 * 2 ** Math.max(0, attempts - 1), 30 * 60_000);
}

/** One dataset's progress in a backfill, as the API shows it. */
export interface BackfillDatasetProgress {
  windowsDone: number;
  windowsTotal: number;
  rows: number;
  files: number;
  bytes: number;
}

/** A backfill, as stored and shown (the engine's internal positions are in `doneThroughMs`). */
export interface Backfill {
  id: string;
  workspaceId: string;
  destinationId: string;
  status: BackfillStatus;
  /** True for `"from": "earliest"`. */
  fullHistory: boolean;
  datasets: EventDataset[];
  /** The range asked for (ISO). */
  from: string;
  to: string;
  /** The range on the grid. */
  range: BackfillRange;
  /** Per dataset: every window through this grid point is written. */
  doneThroughMs: Partial<Record<EventDataset, number>>;
  /**
   * Per dataset, what the current run's writers finished beyond `doneThroughMs`: span start (ms, as a key) to
   * the end of its last finished window. Writers set it as windows finish; Commit keeps only what is still
   * beyond the new `doneThroughMs`. Progress moves with it, not only at Commit ({@link windowsDoneOf}).
   */
  reached: Partial<Record<EventDataset, Record<string, number>>>;
  progress: Partial<Record<EventDataset, BackfillDatasetProgress>>;
  /** Failed attempts of the current chunk. */
  attempts: number;
  error: string | null;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  updatedAt: string;
}

/**
 * A new backfill id: `bf_`, the creation time as 12 hex digits, then 12 random hex digits, so ids sort by
 * creation time (the store lists them newest first by id).
 */
export function backfillId(nowMs: number, randomHex: string): string {
  return `bf_${Math.floor(nowMs).toString(16).padStart(12, '0')}${randomHex.slice(0, 12)}`;
}
