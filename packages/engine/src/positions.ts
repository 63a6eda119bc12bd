/**
 * Where a run and its datasets start, shared by planning, backfills, commit and dispatch (kept apart from
 * `plan.ts` so that `backfill.ts`, which planning calls, needs nothing of it).
 */
import { createHash } from 'node:crypto';
import type { CursorState } from '@sluice/control';
import {
  type Dataset,
  type Destination,
  type EventDataset,
  type FileFormat,
  fileFormatOf,
  gridExportLimit,
  gridPointAtOrBefore,
  gridStartOf,
  gridStepMs,
  gridTimingOf,
  includesChildren,
  type Layout,
  layoutOf,
  nextSlotAfter,
  RUN_HOUR_LEAD_MS,
} from '@sluice/core';

/**
 * How long a claimed lease lasts: longer than an Express execution can run (5 minutes), so a live run never
 * loses it, short enough that a run that died is settled soon (dispatch finds the expired lease).
 */
export const LEASE_DURATION_MS = 6 * 60_000;

/** The run id of an execution: stable, so a retried ClaimAndPlan of the same execution is the same run. */
export function runIdOf(executionId: string): string {
  return `run_${createHash('sha256').update(executionId).digest('hex').slice(0, 24)}`;
}

/** The latest grid point a run at `nowMs` may export through, on the destination's current grid. */
export function exportLimitOf(destination: Destination, nowMs: number): number {
  const grid = currentGrid(destination);
  return gridExportLimit(nowMs, destination.frequency, grid.phaseMs, grid.lagMs);
}

/** The destination's next scheduled run after `nowMs`: its schedule, else its spread slot. */
export function nextRunOf(destination: Destination, nowMs: number): number {
  return nextSlotAfter(nowMs, destination.frequency, destination.id, destination.schedule);
}

/**
 * The exact start of an event dataset's export: the time it was added (`datasetStartedAt`), else
 * `startFrom`, else the creation time. No row recorded at or before it is exported.
 */
export function exactStartMs(destination: Destination, dataset: Dataset): number {
  const started = destination.datasetStartedAt[dataset] ?? destination.startFrom;
  const parsed = Date.parse(started);
  const exact = Number.isFinite(parsed) ? parsed : Date.parse(destination.createdAt);
  if (layoutOf(destination) !== 'run_hour' || started !== destination.startFrom) return exact;
  // run_hour: the export's start is its first window's start, so the first window is whole; without a
  // startFrom (it is the creation time), the first run covers only the most recent whole window.
  const grid = currentGrid(destination);
  if (destination.startFrom !== destination.createdAt) return gridStartOf(exact, grid.stepMs, grid.phaseMs);
  return gridPointAtOrBefore(exact - RUN_HOUR_LEAD_MS, grid.stepMs, grid.phaseMs) - grid.stepMs;
}

/**
 * The grid, format and layout of windows planned now: the frequency's step, shifted in `run_hour` so that
 * windows end five minutes before the schedule's runs (`gridPhaseMs`), and the lag behind real time that
 * goes with it (two minutes; five in `run_hour`); `partitioned` when the export includes child organisations
 * (its files go to one partition per organisation).
 */
export function currentGrid(destination: Destination): {
  stepMs: number;
  phaseMs: number;
  format: FileFormat;
  layout: Layout;
  lagMs: number;
  partitioned?: true;
} {
  return {
    stepMs: gridStepMs(destination.frequency),
    ...gridTimingOf(destination),
    format: fileFormatOf(destination),
    layout: layoutOf(destination),
    ...(includesChildren(destination) ? { partitioned: true as const } : {}),
  };
}

/**
 * Where an event dataset's cursor starts when it has never been committed: the start of the grid cell
 * holding its exact start ({@link exactStartMs}), so the first window keeps the grid window's name; the
 * writer leaves out that window's rows recorded at or before the exact start ({@link withStart}).
 */
export function datasetStartMs(destination: Destination, dataset: Dataset): number {
  const grid = currentGrid(destination);
  return gridStartOf(exactStartMs(destination, dataset), grid.stepMs, grid.phaseMs);
}

/** An event item with the dataset's exact start when the start lies after the item's first window opens. */
export function withStart<T extends { fromMs: number }>(item: T, startMs: number): T & { startMs?: number } {
  return startMs > item.fromMs ? { ...item, startMs } : item;
}

/** The cursor position of an event dataset: committed `exportedThroughMs`, or the dataset's start. */
export function eventCursorMs(
  destination: Destination,
  cursor: CursorState | undefined,
  dataset: EventDataset,
): number {
  return cursor?.exportedThroughMs ?? datasetStartMs(destination, dataset);
}
