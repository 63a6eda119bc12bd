import { FREQUENCY_MS, type Frequency } from './datasets.js';

/**
 * Windows and cursor arithmetic of the export engine (DESIGN.md "Export semantics"). Pure: the engine
 * reads and writes the cursors, this module only decides.
 *
 * A window covers recorded time `(fromMs, toMs]`: `fromMs` exclusive, `toMs` inclusive. New windows are
 * cut at UTC hour boundaries and are at most {@link maxWindowMs} of the frequency long (an hour, or a day
 * for `daily`), so one writer invocation always has a bounded amount of recorded time to write. Hour
 * boundaries include midnights, so windows never cross a UTC midnight: a day D ends with a window whose
 * `toMs` is 23:59:59.999 of D, a row recorded at exactly 00:00:00.000 of D+1 falls in the next window, and
 * every row under `date=D` was recorded on D.
 */

const MINUTE_MS = 60_000;
/** One hour in milliseconds. */
export const HOUR_MS = 60 * MINUTE_MS;
/** One UTC day in milliseconds. */
export const DAY_MS = 24 * HOUR_MS;

/** Exports trail real time by this much, so late writes land before their window is read. */
export const EXPORT_LAG_MS = 2 * MINUTE_MS;

/**
 * The most recorded time one run covers per dataset. A destination further behind catches up this much a
 * run (or {@link MAX_WINDOWS_PER_RUN} windows, whichever is less) and runs again at once. For `daily`
 * (day-long windows) this is at most 8 windows per dataset.
 */
export const MAX_RUN_SPAN_MS = 7 * DAY_MS;

/**
 * The most windows one run plans per dataset: 2 days of hourly catch-up. It keeps the Map payload small
 * (3 event datasets at the cap plus the snapshot stay far below Step Functions' 256 KB) and the run well
 * inside the 5 minutes of an Express execution; a destination still behind runs again at once.
 */
export const MAX_WINDOWS_PER_RUN = 48;

/**
 * The longest window a run plans for a frequency: one hour for `every_5_minutes`, `every_15_minutes` and
 * `hourly`, one day for `daily`. Each window is written by one writer invocation (4 minutes at most), so
 * a busy dataset's catch-up must come in pieces it can finish.
 */
export function maxWindowMs(frequency: Frequency): number {
  return frequency === 'daily' ? DAY_MS : HOUR_MS;
}

/** Failed runs back off from the frequency, doubling, up to this. */
export const MAX_FAILURE_BACKOFF_MS = 6 * HOUR_MS;

/** A window of recorded time, `fromMs` exclusive, `toMs` inclusive (epoch milliseconds). */
export interface Window {
  fromMs: number;
  toMs: number;
}

/** `YYYY-MM-DD` of an instant, in UTC. */
export function utcDate(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** Epoch milliseconds of the UTC midnight that starts the day of `ms`. */
export function startOfUtcDay(ms: number): number {
  return Math.floor(ms / DAY_MS) * DAY_MS;
}

/** The UTC day every row of a window was recorded on (the day of its first included millisecond). */
export function windowDate(window: Window): string {
  return utcDate(window.fromMs + 1);
}

/** True when a window is non-empty and all of `(fromMs, toMs]` lies in one UTC day. */
export function isWithinOneUtcDay(window: Window): boolean {
  return window.toMs > window.fromMs && startOfUtcDay(window.fromMs + 1) === startOfUtcDay(window.toMs);
}

/** The latest recorded time a run at `nowMs` may export through. */
export function exportLimit(nowMs: number): number {
  return nowMs - EXPORT_LAG_MS;
}

/**
 * Cuts `(fromMs, toMs]` at every UTC boundary of `stepMs` (an hour or a day; both divide a UTC day, so
 * every cut list includes the midnights) into windows of at most `stepMs` each, at most `maxWindows` of
 * them. Empty when `toMs <= fromMs`.
 */
export function splitAtBoundaries(
  fromMs: number,
  toMs: number,
  stepMs: number,
  maxWindows = Number.POSITIVE_INFINITY,
): Window[] {
  const windows: Window[] = [];
  let cursor = fromMs;
  while (cursor < toMs && windows.length < maxWindows) {
    // The last millisecond of the step holding cursor + 1.
    const stepEnd = Math.floor((cursor + 1) / stepMs) * stepMs + stepMs - 1;
    const end = Math.min(stepEnd, toMs);
    windows.push({ fromMs: cursor, toMs: end });
    cursor = end;
  }
  return windows;
}

/** Cuts `(fromMs, toMs]` at every UTC midnight into windows of one day each. Empty when `toMs <= fromMs`. */
export function splitAtMidnights(fromMs: number, toMs: number): Window[] {
  return splitAtBoundaries(fromMs, toMs, DAY_MS);
}

/** Inputs of {@link planEventWindows}. */
export interface EventPlanInput {
  /** Everything recorded through this instant is exported: the cursor's `exportedThroughMs`, or the dataset's start. */
  cursorMs: number;
  /** Windows planned by an earlier run and not committed yet, in order. */
  planned: readonly Window[];
  nowMs: number;
  /** The destination's frequency: new windows are at most {@link maxWindowMs} of it long. */
  frequency: Frequency;
  /** @default MAX_RUN_SPAN_MS */
  maxSpanMs?: number;
  /** @default MAX_WINDOWS_PER_RUN */
  maxWindows?: number;
}

/** What a run writes for one event dataset, and what the cursor keeps planned. */
export interface EventPlan {
  /** The windows this run writes, contiguous from the cursor, in order. */
  windows: Window[];
  /** The cursor's new `planned` list: `windows`, followed by earlier planned windows not yet due again. */
  planned: Window[];
  /**
   * True when the dataset is still behind `now - lag` after these windows (the span or the window cap
   * was reached): run again at once.
   */
  behind: boolean;
}

/**
 * Plans the windows of one event dataset.
 *
 * 1. Reuse the windows planned earlier (still contiguous from the cursor) exactly, as they are (a day-long
 *    window planned before windows were cut hourly stays valid), so a retry rewrites the same files under
 *    the same names; stop at the first one past `now - lag` (the clock went back) or at `maxWindows`, and
 *    keep it and the rest planned for later.
 * 2. When every planned window is reused, plan new ones from where they end to
 *    `min(now - lag, cursor + maxSpan)`, cut at UTC hour boundaries into windows of at most
 *    `maxWindowMs(frequency)`, until the run holds `maxWindows` windows.
 */
export function planEventWindows(input: EventPlanInput): EventPlan {
  const limit = exportLimit(input.nowMs);
  const spanEnd = input.cursorMs + (input.maxSpanMs ?? MAX_RUN_SPAN_MS);
  const maxWindows = input.maxWindows ?? MAX_WINDOWS_PER_RUN;
  const windows: Window[] = [];
  let end = input.cursorMs;
  const stale = usablePlanned(input.cursorMs, input.planned);
  let index = 0;
  for (; index < stale.length; index++) {
    const window = stale[index] as Window;
    if (window.toMs > limit || windows.length >= maxWindows) break;
    windows.push({ fromMs: window.fromMs, toMs: window.toMs });
    end = window.toMs;
  }
  const kept = stale.slice(index).map((window) => ({ fromMs: window.fromMs, toMs: window.toMs }));
  if (kept.length === 0) {
    const stepMs = maxWindowMs(input.frequency);
    windows.push(...splitAtBoundaries(end, Math.min(limit, spanEnd), stepMs, maxWindows - windows.length));
    end = windows.at(-1)?.toMs ?? end;
  }
  return { windows, planned: [...windows, ...kept], behind: end < limit };
}

/**
 * The planned windows that still continue the cursor: a contiguous chain starting exactly at `cursorMs`,
 * each within one UTC day. Anything else (a chain broken by an older bug or a manual edit) is dropped.
 */
function usablePlanned(cursorMs: number, planned: readonly Window[]): Window[] {
  const chain: Window[] = [];
  let end = cursorMs;
  for (const window of planned) {
    if (window.fromMs !== end || !isWithinOneUtcDay(window)) break;
    chain.push(window);
    end = window.toMs;
  }
  return chain;
}

/** The result of committing one event dataset. */
export interface EventCommit {
  /** The new `exportedThroughMs`: the end of the contiguous written prefix, or the old cursor. */
  cursorMs: number;
  /** The windows the cursor moved over, in order. */
  committed: Window[];
  /** The windows that stay planned: everything after the prefix. */
  planned: Window[];
}

/**
 * Advances a cursor over the contiguous prefix of planned windows that were all written. A window that was
 * not written (failed, stopped) stops the advance, even when later ones were written: they are rewritten
 * under the same names next time.
 */
export function commitEventWindows(
  cursorMs: number,
  planned: readonly Window[],
  isWritten: (window: Window) => boolean,
): EventCommit {
  const chain = usablePlanned(cursorMs, planned);
  let cursor = cursorMs;
  let index = 0;
  for (; index < chain.length; index++) {
    const window = chain[index] as Window;
    if (!isWritten(window)) break;
    cursor = window.toMs;
  }
  return {
    cursorMs: cursor,
    committed: chain.slice(0, index),
    planned: chain.slice(index),
  };
}

/** A key identifying a window, for sets of written windows. */
export function windowKey(window: Window): string {
  return `${window.fromMs}-${window.toMs}`;
}

/**
 * True when the daily subscriber snapshot is due: none taken yet, or the last one is of an earlier UTC day.
 */
export function isSnapshotDue(snapshotDate: string | undefined, nowMs: number): boolean {
  return snapshotDate === undefined || snapshotDate < utcDate(nowMs);
}

/**
 * The snapshot date a run writes: the planned one when it is still today (a retry rewrites the same
 * names), otherwise today. Undefined when today's snapshot is already complete.
 */
export function planSnapshot(
  snapshotDate: string | undefined,
  plannedDate: string | undefined,
  nowMs: number,
): string | undefined {
  if (!isSnapshotDue(snapshotDate, nowMs)) return undefined;
  const today = utcDate(nowMs);
  return plannedDate === today ? plannedDate : today;
}

/**
 * The next scheduled run after `nowMs`: the next UTC-aligned slot of the frequency (every 5 or 15 minutes
 * on the quarter hour, hourly on the hour, daily at midnight).
 */
export function nextScheduledRun(nowMs: number, frequency: Frequency): number {
  const step = FREQUENCY_MS[frequency];
  return Math.floor(nowMs / step) * step + step;
}

/**
 * When a failed destination runs again: the frequency, doubled for every further consecutive failure, at
 * most {@link MAX_FAILURE_BACKOFF_MS}. `consecutiveFailures` counts the failure just recorded (1 or more).
 */
export function failureBackoffMs(frequency: Frequency, consecutiveFailures: number): number {
  const base = FREQUENCY_MS[frequency];
  const doublings = Math.min(Math.max(consecutiveFailures, 1) - 1, 20);
  return Math.min(base * 2 ** doublings, MAX_FAILURE_BACKOFF_MS);
}

/** The time of the next attempt after a failure at `nowMs`. */
export function nextRunAfterFailure(
  nowMs: number,
  frequency: Frequency,
  consecutiveFailures: number,
): number {
  return nowMs + failureBackoffMs(frequency, consecutiveFailures);
}
