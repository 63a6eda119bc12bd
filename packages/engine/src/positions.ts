/**
 * Where a run and its datasets start, shared by planning, backfills, commit and dispatch (kept apart from
 * `plan.ts` so that `backfill.ts`, which planning calls, needs nothing of it).
 */
import { createHash } from 'node:crypto';
import type { CursorState } from '@sluice/control';
import { type Dataset, type Destination, type EventDataset, gridStartOf, gridStepMs } from '@sluice/core';

/**
 * How long a claimed lease lasts: longer than an Express execution can run (5 minutes), so a live run never
 * loses it, short enough that a run that died is settled soon (dispatch finds the expired lease).
 */
export const LEASE_DURATION_MS = 6 * 60_000;

/** The run id of an execution: stable, so a retried ClaimAndPlan of the same execution is the same run. */
export function runIdOf(executionId: string): string {
  return `run_${createHash('sha256').update(executionId).digest('hex').slice(0, 24)}`;
}

/**
 * The exact start of an event dataset's export: the time it was added (`datasetStartedAt`), else
 * `startFrom`, else the creation time. No row recorded at or before it is exported.
 */
export function exactStartMs(destination: Destination, dataset: Dataset): number {
  const started = destination.datasetStartedAt[dataset] ?? destination.startFrom;
  const parsed = Date.parse(started);
  return Number.isFinite(parsed) ? parsed : Date.parse(destination.createdAt);
}

/**
 * Where an event dataset's cursor starts when it has never been committed: the start of the grid cell
 * holding its exact start ({@link exactStartMs}), so the first window keeps the grid window's name; the
 * writer leaves out that window's rows recorded at or before the exact start ({@link withStart}).
 */
export function datasetStartMs(destination: Destination, dataset: Dataset): number {
  return gridStartOf(exactStartMs(destination, dataset), gridStepMs(destination.frequency));
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
