import { FREQUENCY_MS, type Frequency } from './datasets.js';
import { type FileFormat, sameFileFormat } from './file-format.js';
import type { IncludedOrganization } from './included-organizations.js';
import type { Layout } from './run-hour.js';

/**
 * Windows and cursor arithmetic of the export engine (DESIGN.md "Export semantics"). Pure: the engine
 * reads and writes the cursors, this module only decides.
 *
 * A window covers recorded time `(fromMs, toMs]`: `fromMs` exclusive, `toMs` inclusive. Windows are the cells
 * of a fixed UTC grid whose step is the destination's frequency ({@link gridStepMs}: 5 or 15 minutes, an
 * hour, a day), so the same rows always land in a file of the same name, whoever writes it. Every step
 * divides a day, so windows never cross a UTC midnight: a day D ends with a window whose `toMs` is
 * 23:59:59.999 of D, a row recorded at exactly 00:00:00.000 of D+1 falls in the next window, and every row
 * under `date=D` was recorded on D. A run groups its windows into a few spans, one writer invocation each.
 */

const MINUTE_MS = 60_000;
/** One hour in milliseconds. */
export const HOUR_MS = 60 * MINUTE_MS;
/** One UTC day in milliseconds. */
export const DAY_MS = 24 * HOUR_MS;
/** How long the hot event log keeps rows unless the deployment says otherwise. */
export const DEFAULT_EVENT_RETENTION_MS = 35 * DAY_MS;

/** Exports trail real time by this much, so late writes land before their window is read. */
export const EXPORT_LAG_MS = 2 * MINUTE_MS;

/**
 * The most recorded time one run plans per dataset. A destination further behind catches up this much a run
 * (less when its writers run out of time: see the run budget) and runs again at once.
 */
export const MAX_RUN_SPAN_MS = 7 * DAY_MS;

/**
 * The most spans one run plans per event dataset: the writers of one dataset that run at once. Each span is
 * one writer invocation that walks its windows in order within the run's time budget, so the ExportRun
 * payload stays a few kilobytes however many windows a run covers (3 event datasets at the cap plus the
 * snapshot are 25 Map items).
 */
export const MAX_SPANS_PER_DATASET = 8;

/**
 * The grid step of a frequency: its period (5 minutes, 15 minutes, an hour, a day). Event windows are the
 * cells of this fixed UTC grid, so a window has the same boundaries, names and content whoever writes it and
 * whenever: a run, a retry, a later backfill.
 */
export function gridStepMs(frequency: Frequency): number {
  return FREQUENCY_MS[frequency];
}

/**
 * The last grid point at or before `ms`. Grid points are the last milliseconds of the grid's cells
 * (`k * stepMs - 1`), because windows are `(fromMs, toMs]`: the cell `[k*step, (k+1)*step)` of recorded
 * time is the window `(k*step - 1, (k+1)*step - 1]`.
 */
export function gridPointAtOrBefore(ms: number, stepMs: number, phaseMs = 0): number {
  return Math.floor((ms + 1 - phaseMs) / stepMs) * stepMs - 1 + phaseMs;
}

/**
 * Where an export that starts at `startMs` starts on the grid: the start of the cell holding `startMs`, so
 * the first window is a whole cell (with the few rows before `startMs` of that cell: at least once).
 */
export function gridStartOf(startMs: number, stepMs: number, phaseMs = 0): number {
  return gridPointAtOrBefore(startMs - 1, stepMs, phaseMs);
}

/**
 * The latest grid point a run at `nowMs` may export through: whole cells older than the lag (two minutes; a
 * `run_hour` grid passes its five, `RUN_HOUR_LEAD_MS`). `phaseMs` shifts the grid (see {@link Span.phaseMs}).
 */
export function gridExportLimit(
  nowMs: number,
  frequency: Frequency,
  phaseMs = 0,
  lagMs = EXPORT_LAG_MS,
): number {
  return gridPointAtOrBefore(nowMs - lagMs, gridStepMs(frequency), phaseMs);
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
  phaseMs = 0,
): Window[] {
  const windows: Window[] = [];
  let cursor = fromMs;
  while (cursor < toMs && windows.length < maxWindows) {
    // The last millisecond of the step holding cursor + 1.
    const stepEnd = Math.floor((cursor + 1 - phaseMs) / stepMs) * stepMs + stepMs - 1 + phaseMs;
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

/**
 * A run of consecutive windows one writer invocation walks in order: `(fromMs, toMs]` cut at every
 * `stepMs` boundary of the UTC grid ({@link spanWindows}). Without `stepMs` the span is one window (planned
 * by an older version, when windows did not lie on the grid).
 */
export interface Span extends Window {
  stepMs?: number;
  /**
   * The grid's shift: its points are `k × stepMs + phaseMs - 1`. Absent (0) on the UTC grid; a `run_hour`
   * export's grid is shifted so that every window ends five minutes before its scheduled run
   * (`gridPhaseMs` in `run-hour.ts`). Such windows may cross a UTC midnight (their folders are the run's).
   */
  phaseMs?: number;
  /** The file format its windows are written in, fixed when first planned (the engine sets it). */
  format?: FileFormat;
  /** The layout its files are named in, fixed when first planned (the engine sets it); absent: `date`. */
  layout?: Layout;
  /**
   * An export that includes child organisations: the organisations its windows read, with their starts and
   * stops, fixed when first planned (the engine sets it; `includedOrganizations`). Present, the files are
   * partitioned by organisation; absent, the span reads the export's own workspace only.
   */
  organizations?: IncludedOrganization[];
  /**
   * A span cut from a partitioned era (`groupEraWindows`, for a backfill) before the engine sets its
   * `organizations`.
   */
  partitioned?: true;
}

/** The windows of a span, in order. */
export function spanWindows(span: Span): Window[] {
  if (span.stepMs === undefined) return [{ fromMs: span.fromMs, toMs: span.toMs }];
  return splitAtBoundaries(span.fromMs, span.toMs, span.stepMs, Number.POSITIVE_INFINITY, span.phaseMs ?? 0);
}

/** Inputs of {@link planEventSpans}. */
export interface EventPlanInput {
  /** Everything recorded through this instant is exported: the cursor's `exportedThroughMs`, or the dataset's start. */
  cursorMs: number;
  /** Spans planned by an earlier run and not committed yet, in order. */
  planned: readonly Span[];
  nowMs: number;
  /** The destination's frequency: its period is the grid step of new windows. */
  frequency: Frequency;
  /** The shift of the grid of new windows ({@link Span.phaseMs}). @default 0 */
  phaseMs?: number;
  /** How long after a window ends it may be planned. @default EXPORT_LAG_MS */
  lagMs?: number;
  /** @default MAX_RUN_SPAN_MS */
  maxSpanMs?: number;
  /** @default MAX_SPANS_PER_DATASET */
  maxSpans?: number;
}

/** What a run writes for one event dataset, and what the cursor keeps planned. */
export interface EventPlan {
  /** The spans this run writes, contiguous from the cursor, in order. */
  spans: Span[];
  /** The cursor's new `planned` list: `spans`, followed by earlier planned spans not yet due again. */
  planned: Span[];
  /** True when the dataset is still behind the export limit after these spans: run again at once. */
  behind: boolean;
}

/**
 * Plans the spans of one event dataset.
 *
 * 1. Reuse the spans planned earlier (still contiguous from the cursor) exactly, so a retry walks the same
 *    windows and rewrites the same files under the same names; stop at the first one past the export limit
 *    (the clock went back) and keep it and the rest planned for later.
 * 2. When every planned span is reused, plan new windows from where they end to
 *    `min(limit, cursor + maxSpan)` on the frequency's grid ({@link gridExportLimit}: only whole cells older
 *    than the lag), and group them into at most `maxSpans` spans of about equal window counts.
 */
export function planEventSpans(input: EventPlanInput): EventPlan {
  const stepMs = gridStepMs(input.frequency);
  const phaseMs = input.phaseMs ?? 0;
  const limit = gridExportLimit(input.nowMs, input.frequency, phaseMs, input.lagMs);
  const maxSpans = input.maxSpans ?? MAX_SPANS_PER_DATASET;
  const spans: Span[] = [];
  let end = input.cursorMs;
  const stale = usablePlanned(input.cursorMs, input.planned);
  let index = 0;
  for (; index < stale.length; index++) {
    const span = stale[index] as Span;
    if (span.toMs > limit) break;
    spans.push(copySpan(span));
    end = span.toMs;
  }
  const kept = stale.slice(index).map(copySpan);
  if (kept.length === 0) {
    const spanEnd = gridPointAtOrBefore(
      input.cursorMs + (input.maxSpanMs ?? MAX_RUN_SPAN_MS),
      stepMs,
      phaseMs,
    );
    const to = Math.min(limit, Math.max(spanEnd, end));
    // After a change to a coarser frequency, the old grid's cell first ends at a boundary of the new one.
    const align = alignmentOf(end, stepMs, phaseMs);
    // `to` is a point of the new grid, so it is at or after the boundary when it is after `end`.
    if (align !== undefined && to >= align.toMs) {
      spans.push({ fromMs: end, toMs: align.toMs, stepMs: align.stepMs });
      end = align.toMs;
    }
    // Off every finer grid (a change of the grid's shift): the first window runs to the new grid's next point.
    const windows = splitAtBoundaries(end, to, stepMs, Number.POSITIVE_INFINITY, phaseMs);
    spans.push(...groupWindows(windows, Math.max(1, maxSpans - spans.length), stepMs, phaseMs));
    end = spans.at(-1)?.toMs ?? end;
  }
  return { spans, planned: [...spans, ...kept], behind: end < limit };
}

/** Groups consecutive windows into at most `count` spans of about equal window counts. */
function groupWindows(windows: readonly Window[], count: number, stepMs: number, phaseMs = 0): Span[] {
  const spans: Span[] = [];
  const groups = Math.min(count, windows.length);
  let start = 0;
  for (let g = 0; g < groups; g++) {
    const size = Math.floor((windows.length - start) / (groups - g));
    const first = windows[start] as Window;
    const last = windows[start + size - 1] as Window;
    spans.push({ fromMs: first.fromMs, toMs: last.toMs, stepMs, ...(phaseMs !== 0 ? { phaseMs } : {}) });
    start += size;
  }
  return spans;
}

function copySpan(span: Span): Span {
  return {
    fromMs: span.fromMs,
    toMs: span.toMs,
    ...(span.stepMs !== undefined ? { stepMs: span.stepMs } : {}),
    ...(span.phaseMs ? { phaseMs: span.phaseMs } : {}),
    ...(span.format !== undefined ? { format: span.format } : {}),
    ...(span.layout !== undefined && span.layout !== 'date' ? { layout: span.layout } : {}),
    ...(span.organizations !== undefined ? { organizations: span.organizations.map((o) => ({ ...o })) } : {}),
  };
}

/** The grid steps of the frequencies, finest first: each divides the next, so a coarser grid point is on every finer grid. */
const STEPS = Object.values(FREQUENCY_MS).sort((a, b) => a - b);

/**
 * Windows continuing from `endMs` when it is not a point of the `stepMs` grid (the frequency became
 * coarser since the windows before it were planned): cells of the coarsest grid `endMs` lies on, through
 * the next point of the `stepMs` grid, so no window is ever off a grid and the new grid starts on its own
 * boundary. Undefined when `endMs` is on the grid (or on no grid at all: a cursor of an older version).
 */
export function alignmentOf(
  endMs: number,
  stepMs: number,
  phaseMs = 0,
): { stepMs: number; toMs: number } | undefined {
  if (mod(endMs + 1 - phaseMs, stepMs) === 0) return undefined;
  // A finer UTC grid holding both `endMs` and the new grid's points (a shifted grid may have none).
  const finer = STEPS.filter(
    (step) => step < stepMs && mod(endMs + 1, step) === 0 && mod(phaseMs, step) === 0,
  ).at(-1);
  if (finer === undefined) return undefined;
  return { stepMs: finer, toMs: gridPointAtOrBefore(endMs, stepMs, phaseMs) + stepMs };
}

/** `a mod b`, never negative. */
function mod(a: number, b: number): number {
  return ((a % b) + b) % b;
}

/**
 * The grid step and file format an event dataset's windows were first planned with, from `fromMs` (a grid
 * point) up to the next era's start. The cursor keeps them, so a backfill rewrites a delivered window under
 * the names, grid and format it was delivered with.
 */
export interface Era {
  fromMs: number;
  stepMs: number;
  format: FileFormat;
  /** The grid's shift ({@link Span.phaseMs}); absent: 0. */
  phaseMs?: number;
  /** The layout the windows are named in; absent: `date`. */
  layout?: Layout;
  /** The windows' files are partitioned by organisation (the export included child organisations); absent: not. */
  partitioned?: true;
}

/** True for an era or span whose files are partitioned by organisation. */
function isPartitioned(value: { partitioned?: true; organizations?: unknown }): boolean {
  return value.partitioned === true || value.organizations !== undefined;
}

/** True when two eras (or an era and a span) name their windows the same way on the same grid. */
type GridLike = {
  stepMs?: number;
  phaseMs?: number;
  format?: FileFormat;
  layout?: Layout;
  partitioned?: true;
  organizations?: unknown;
};
function sameGrid(a: GridLike, b: GridLike): boolean {
  return (
    a.stepMs === b.stepMs &&
    isPartitioned(a) === isPartitioned(b) &&
    (a.phaseMs ?? 0) === (b.phaseMs ?? 0) &&
    (a.layout ?? 'date') === (b.layout ?? 'date') &&
    a.format !== undefined &&
    b.format !== undefined &&
    sameFileFormat(a.format, b.format)
  );
}

/** An era's grid and naming, stored compactly (no `phaseMs` 0, no `layout` `date`). */
function eraOf(fromMs: number, from: Omit<Era, 'fromMs'> & { organizations?: unknown }): Era {
  return {
    fromMs,
    stepMs: from.stepMs,
    format: from.format,
    ...(from.phaseMs ? { phaseMs: from.phaseMs } : {}),
    ...(from.layout !== undefined && from.layout !== 'date' ? { layout: from.layout } : {}),
    ...(isPartitioned(from) ? { partitioned: true as const } : {}),
  };
}

/**
 * The eras after planning `spans` (in order): a span whose step or format differs from the era holding its
 * start begins a new era there (eras after it, planned again differently, end). Spans without a step or a
 * format (planned by older versions) change nothing. Pure.
 */
export function erasAfterPlanning(eras: readonly Era[], spans: readonly Span[]): Era[] {
  const result = [...eras];
  for (const span of spans) {
    if (span.stepMs === undefined || span.format === undefined) continue;
    const holding = result.filter((era) => era.fromMs <= span.fromMs).at(-1);
    if (holding !== undefined && sameGrid(holding, span)) continue;
    while ((result.at(-1)?.fromMs ?? Number.NEGATIVE_INFINITY) >= span.fromMs) result.pop();
    result.push(eraOf(span.fromMs, { stepMs: span.stepMs, format: span.format, ...span }));
  }
  return result;
}

/**
 * The eras of a dataset's whole history: the stored ones before `plannedEndMs` (where the regular export's
 * planned windows end), then the grid it continues on from there ({@link alignmentOf}) and the current step
 * and format. The first era also covers all time before it. Pure.
 */
export function historyEras(
  stored: readonly Era[],
  plannedEndMs: number,
  current: Omit<Era, 'fromMs'>,
): Era[] {
  const eras = stored.filter((era) => era.fromMs < plannedEndMs);
  const align = alignmentOf(plannedEndMs, current.stepMs, current.phaseMs ?? 0);
  if (align !== undefined) {
    eras.push({
      fromMs: plannedEndMs,
      stepMs: align.stepMs,
      format: current.format,
      ...(current.partitioned === true ? { partitioned: true as const } : {}),
    });
  }
  eras.push(eraOf(align?.toMs ?? plannedEndMs, current));
  return eras.map((era, index) => (index === 0 ? { ...era, fromMs: Number.NEGATIVE_INFINITY } : era));
}

/** The first grid point at or after `ms`. */
export function gridPointAtOrAfter(ms: number, stepMs: number, phaseMs = 0): number {
  const before = gridPointAtOrBefore(ms, stepMs, phaseMs);
  return before === ms ? ms : before + stepMs;
}

/**
 * The windows of `(fromMs, toMs]` as the regular export delivers them: each part cut on the grid of the era
 * holding it (its first window from the grid point at or before `fromMs`, its last to the one at or after
 * `toMs`), in order, each with its era's step and format. Pure.
 */
export function windowsOfEras(fromMs: number, toMs: number, eras: readonly Era[]): EraWindow[] {
  const windows: EraWindow[] = [];
  let position = fromMs;
  for (const [index, era] of eras.entries()) {
    const eraEnd = eras[index + 1]?.fromMs ?? Number.POSITIVE_INFINITY;
    if (position >= toMs) break;
    if (eraEnd <= position) continue;
    const phaseMs = era.phaseMs ?? 0;
    // An era begun off its grid (after a change of the grid's shift) starts with the window from its start.
    const from = Math.max(
      era.fromMs,
      gridPointAtOrBefore(Math.max(position, era.fromMs), era.stepMs, phaseMs),
    );
    const to = Math.min(eraEnd, gridPointAtOrAfter(Math.min(toMs, eraEnd), era.stepMs, phaseMs));
    for (const window of splitAtBoundaries(from, to, era.stepMs, Number.POSITIVE_INFINITY, phaseMs)) {
      windows.push({ ...window, ...eraOf(0, era), fromMs: window.fromMs });
    }
    position = Math.max(position, to);
  }
  return windows;
}

/**
 * Groups consecutive windows of one step and format each into at most about `count` spans (a span never
 * mixes steps or formats). Pure.
 */
export function groupEraWindows(windows: readonly EraWindow[], count: number): Span[] {
  const runs: EraWindow[][] = [];
  for (const window of windows) {
    const last = runs.at(-1)?.at(-1);
    if (last !== undefined && sameGrid(last, window)) {
      runs.at(-1)?.push(window);
    } else runs.push([window]);
  }
  const spans: Span[] = [];
  for (const run of runs) {
    const first = run[0] as (typeof run)[number];
    const share = Math.max(1, Math.floor((count * run.length) / windows.length));
    for (const span of groupWindows(run, share, first.stepMs, first.phaseMs ?? 0)) {
      spans.push({
        ...span,
        format: first.format,
        ...(first.layout !== undefined && first.layout !== 'date' ? { layout: first.layout } : {}),
        ...(first.partitioned === true ? { partitioned: true as const } : {}),
      });
    }
  }
  return spans;
}

/** A window of {@link windowsOfEras}: with its era's grid, format and layout. */
export type EraWindow = Window & Omit<Era, 'fromMs'>;

/**
 * The planned spans that still continue the cursor: a contiguous chain starting exactly at `cursorMs`, each
 * window within one UTC day. Anything else (a chain broken by an older bug or a manual edit) is dropped.
 */
function usablePlanned(cursorMs: number, planned: readonly Span[]): Span[] {
  const chain: Span[] = [];
  let end = cursorMs;
  for (const span of planned) {
    if (span.fromMs !== end || !(span.toMs > span.fromMs)) break;
    if (span.stepMs !== undefined ? !dividesDay(span.stepMs) : !isWithinOneUtcDay(span)) break;
    chain.push(span);
    end = span.toMs;
  }
  return chain;
}

/** True for a grid step whose cells never cross a UTC midnight. */
function dividesDay(stepMs: number): boolean {
  return Number.isInteger(stepMs) && stepMs > 0 && DAY_MS % stepMs === 0;
}

/** The result of committing one event dataset. */
export interface EventCommit {
  /** The new `exportedThroughMs`: the end of the contiguous written prefix of windows, or the old cursor. */
  cursorMs: number;
  /** The windows the cursor moved over, in order. */
  committed: Window[];
  /** The spans that stay planned: everything after the prefix (a span partly committed starts at the cursor). */
  planned: Span[];
}

/**
 * Advances a cursor over the contiguous prefix of planned windows that are all written. A window that is not
 * written (failed, stopped, out of time) stops the advance, even when later ones were written: they are
 * recognised as written next time (their progress is kept) and committed once the gap is filled.
 */
export function commitEventSpans(
  cursorMs: number,
  planned: readonly Span[],
  isWritten: (window: Window) => boolean,
): EventCommit {
  const chain = usablePlanned(cursorMs, planned);
  let cursor = cursorMs;
  const committed: Window[] = [];
  const remaining: Span[] = [];
  for (const span of chain) {
    if (remaining.length > 0) {
      remaining.push(copySpan(span));
      continue;
    }
    for (const window of spanWindows(span)) {
      if (!isWritten(window)) break;
      committed.push(window);
      cursor = window.toMs;
    }
    if (cursor < span.toMs) remaining.push({ ...copySpan(span), fromMs: cursor });
  }
  return { cursorMs: cursor, committed, planned: remaining };
}

/** A key identifying a window, for sets of written windows and progress records. */
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
 * The snapshot date a run writes: the planned one until it is complete, even after its day ended (a retry
 * rewrites the same names and finishes that day's folder with its `_SUCCESS`, never leaving it partial);
 * otherwise today. Undefined when today's snapshot is already complete.
 */
export function planSnapshot(
  snapshotDate: string | undefined,
  plannedDate: string | undefined,
  nowMs: number,
): string | undefined {
  if (plannedDate !== undefined && (snapshotDate === undefined || snapshotDate < plannedDate)) {
    return plannedDate;
  }
  if (!isSnapshotDue(snapshotDate, nowMs)) return undefined;
  return utcDate(nowMs);
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
