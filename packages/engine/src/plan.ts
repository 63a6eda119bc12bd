import { createHash, randomUUID } from 'node:crypto';
import type { CursorState, CursorWrite, Lease, PlannedWindow } from '@sluice/control';
import {
  type Dataset,
  type Destination,
  type EventDataset,
  isEventDataset,
  planEventWindows,
  planSnapshot,
} from '@sluice/core';
import { type EngineDeps, resolveDeps } from './deps.js';
import { classifyEngineError } from './errors.js';
import type { ClaimAndPlanInput, ClaimAndPlanOutput, RunRef, WorkItem } from './payloads.js';

/**
 * How long a claimed lease lasts: longer than an Express execution can run (5 minutes), so a live run never
 * loses it, short enough that a crashed run frees the destination soon.
 */
export const LEASE_DURATION_MS = 6 * 60_000;

/** The run id of an execution: stable, so a retried ClaimAndPlan of the same execution is the same run. */
export function runIdOf(executionId: string): string {
  return `run_${createHash('sha256').update(executionId).digest('hex').slice(0, 24)}`;
}

/** Where an event dataset's export starts when its cursor has never been committed. */
export function datasetStartMs(destination: Destination, dataset: Dataset): number {
  const started = destination.datasetStartedAt[dataset] ?? destination.startFrom;
  const ms = Date.parse(started);
  return Number.isFinite(ms) ? ms : Date.parse(destination.createdAt);
}

/** The cursor position of an event dataset: committed `exportedThroughMs`, or the dataset's start. */
export function eventCursorMs(
  destination: Destination,
  cursor: CursorState | undefined,
  dataset: EventDataset,
): number {
  return cursor?.exportedThroughMs ?? datasetStartMs(destination, dataset);
}

/**
 * ClaimAndPlan: the first task of an ExportRun.
 * 1. Read the destination: deleted or paused → skipped.
 * 2. Claim its lease (conditional put); another live run holds it → skipped.
 * 3. Plan each dataset from its cursor: planned windows are reused exactly, new ones cut at UTC hour
 *    boundaries, at most an hour long (a day for `daily`), at most 48 windows and 7 days a run (a
 *    destination still behind runs again at once); the subscriber snapshot when today's is due.
 * 4. Store the plan on the cursors (fenced by the lease and the cursors' positions) before anything is
 *    written, so a retry rewrites exactly these windows.
 * 5. Write the run record (running) and mark the destination running (a queued manual run is taken).
 * On an error after the claim the lease is released before the error is rethrown (classified).
 */
export async function claimAndPlan(
  input: ClaimAndPlanInput,
  injected: Partial<EngineDeps> = {},
): Promise<ClaimAndPlanOutput> {
  const deps = resolveDeps(injected);
  let lease: Lease | undefined;
  try {
    const now = deps.now();
    const destination = await deps.controlStore.getDestination(input.workspaceId, input.destinationId);
    if (destination === undefined) return { outcome: 'skipped', reason: 'deleted' };
    if (!destination.isEnabled) return { outcome: 'skipped', reason: 'paused' };

    const runId = runIdOf(input.executionId);
    lease = await deps.stateStore.claimLease({
      workspaceId: input.workspaceId,
      destinationId: input.destinationId,
      runId,
      token: randomUUID(),
      startedAt: now.toISOString(),
      nowMs: now.getTime(),
      durationMs: LEASE_DURATION_MS,
    });
    if (lease === undefined) return { outcome: 'skipped', reason: 'lease_held' };
    const held = lease;

    const cursors = await deps.stateStore.getCursors(input.workspaceId, input.destinationId);
    const { items, writes } = planDatasets(destination, cursors, runId, now.getTime());
    const saved = await deps.stateStore.savePlanned({ lease: held }, writes, now);
    if (!saved) {
      await deps.stateStore.releaseLease(held);
      lease = undefined;
      return { outcome: 'skipped', reason: 'lease_lost' };
    }

    const isManual = input.trigger === 'manual';
    await deps.stateStore.putRun({
      workspaceId: input.workspaceId,
      id: runId,
      destinationId: input.destinationId,
      status: 'running',
      isManual,
      rowCount: 0,
      fileCount: 0,
      byteCount: 0,
      stats: {},
      error: null,
      startedAt: held.startedAt,
      finishedAt: null,
    });
    await deps.stateStore.updateRunState(
      input.workspaceId,
      input.destinationId,
      { status: 'running', ...(isManual || destination.manualRunQueued ? { manualRunQueued: false } : {}) },
      now,
    );

    const run: RunRef = {
      workspaceId: input.workspaceId,
      destinationId: input.destinationId,
      runId,
      startedAt: held.startedAt,
      leaseToken: held.token,
      configVersion: destination.configVersion,
    };
    return { outcome: 'planned', run, items };
  } catch (error) {
    if (lease !== undefined) await deps.stateStore.releaseLease(lease).catch(() => false);
    throw classifyEngineError(error);
  }
}

/** The work items of a run and the cursor writes that store them as planned. Pure. */
export function planDatasets(
  destination: Destination,
  cursors: ReadonlyMap<Dataset, CursorState>,
  runId: string,
  nowMs: number,
): { items: WorkItem[]; writes: CursorWrite[] } {
  const items: WorkItem[] = [];
  const writes: CursorWrite[] = [];
  for (const dataset of destination.datasets) {
    const cursor = cursors.get(dataset);
    if (isEventDataset(dataset)) {
      const cursorMs = eventCursorMs(destination, cursor, dataset);
      const stored = cursor?.plannedWindows ?? [];
      const plan = planEventWindows({
        cursorMs,
        planned: stored,
        nowMs,
        frequency: destination.frequency,
      });
      const runIds = new Map(stored.map((window) => [`${window.fromMs}-${window.toMs}`, window.runId]));
      const planned: PlannedWindow[] = plan.planned.map((window) => ({
        ...window,
        runId: runIds.get(`${window.fromMs}-${window.toMs}`) ?? runId,
      }));
      for (const window of plan.windows) items.push({ dataset, kind: 'events', ...window });
      const unchanged =
        planned.length === stored.length &&
        planned.every((w, i) => w.fromMs === stored[i]?.fromMs && w.toMs === stored[i]?.toMs);
      if (!unchanged) {
        writes.push({
          dataset,
          expected: positionOf(cursor),
          plannedWindows: planned,
        });
      }
    } else {
      const date = planSnapshot(cursor?.snapshotDate, cursor?.plannedSnapshot?.date, nowMs);
      if (date === undefined) continue;
      items.push({ dataset: 'subscribers', kind: 'snapshot', date });
      if (cursor?.plannedSnapshot?.date !== date) {
        writes.push({
          dataset,
          expected: positionOf(cursor),
          plannedSnapshot: { date, runId },
        });
      }
    }
  }
  return { items, writes };
}

/** The stored position of a cursor, as a write's expected value. */
export function positionOf(cursor: CursorState | undefined): CursorWrite['expected'] {
  const position: CursorWrite['expected'] = {};
  if (cursor?.exportedThroughMs !== undefined) position.exportedThroughMs = cursor.exportedThroughMs;
  if (cursor?.snapshotDate !== undefined) position.snapshotDate = cursor.snapshotDate;
  return position;
}
