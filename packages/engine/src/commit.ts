import type { CursorWrite, DatasetRunStats, PlannedWindow } from '@sluice/control';
import {
  commitEventWindows,
  exportLimit,
  isEventDataset,
  nextScheduledRun,
  type Window,
  windowKey,
} from '@sluice/core';
import { type EngineDeps, resolveDeps } from './deps.js';
import { classifyEngineError } from './errors.js';
import type { CommitInput, CommitOutput, StopReason, WindowResult } from './payloads.js';
import { eventCursorMs, positionOf } from './plan.js';

/** The note a stopped run's record carries in `error` (the run itself counts as succeeded, not failed). */
export const STOP_NOTES: Record<StopReason, string> = {
  paused: 'Stopped before the next file: the export was paused. It continues from here when resumed.',
  deleted: 'Stopped before the next file: the export was deleted.',
  config_changed:
    'Stopped before the next file: the location or credentials changed. The export continues with the new settings.',
};

/** The note of a run whose lease another execution took over: it wrote files but moved no cursor. */
export const SUPERSEDED_NOTE =
  'Another run of this export took over before this one finished; its files were kept and it did not move the export position.';

/**
 * Commit: the last task of an ExportRun.
 * 1. Read the cursors and the destination; mark which planned windows the Map wrote.
 * 2. Advance each event dataset's cursor over its contiguous written windows and the snapshot date when
 *    the snapshot completed: one transaction, conditional on the lease token and the old positions.
 *    If it fails another execution holds the destination: record this run as superseded and stop.
 * 3. Finish the run record (counts, per-dataset stats, status; a stop is a note, not a failure).
 * 4. Update the destination: idle, `nextRunAt` (now when still behind, else the next slot),
 *    `lastRunAt`, and on success `lastSuccessAt`, failures reset, `lastError` cleared, rows added.
 * 5. Emit the run's metrics and release the lease.
 */
export async function commitRun(
  input: CommitInput,
  injected: Partial<EngineDeps> = {},
): Promise<CommitOutput> {
  const deps = resolveDeps(injected);
  const { run } = input;
  const results = input.results ?? [];
  try {
    const now = deps.now();
    const nowMs = now.getTime();
    const lease = {
      workspaceId: run.workspaceId,
      destinationId: run.destinationId,
      runId: run.runId,
      token: run.leaseToken,
      startedAt: run.startedAt,
      expiresAtMs: 0,
    };
    const destination = await deps.controlStore.getDestination(run.workspaceId, run.destinationId);
    const cursors = await deps.stateStore.getCursors(run.workspaceId, run.destinationId);
    const stopResult = results.find((result) => result.status === 'stopped');
    const written = new Set(
      results
        .filter((result) => result.status === 'written' && result.kind === 'events')
        .map((result) => `${result.dataset}:${result.fromMs}-${result.toMs}`),
    );
    const writtenSnapshot = results.find(
      (result) => result.status === 'written' && result.kind === 'snapshot',
    );

    const writes: CursorWrite[] = [];
    const stats: Record<string, DatasetRunStats> = {};
    const lagSecondsByDataset: Record<string, number> = {};
    let behind = false;
    for (const [dataset, cursor] of cursors) {
      if (isEventDataset(dataset)) {
        if (destination === undefined && cursor.plannedWindows.length === 0) continue;
        const startMs =
          cursor.exportedThroughMs ?? (destination ? eventCursorMs(destination, cursor, dataset) : undefined);
        if (startMs === undefined) continue;
        const commit = commitEventWindows(startMs, cursor.plannedWindows, (window) =>
          written.has(`${dataset}:${windowKey(window)}`),
        );
        if (commit.committed.length > 0) {
          const remaining = new Set(commit.planned.map(windowKey));
          writes.push({
            dataset,
            expected: positionOf(cursor),
            next: { exportedThroughMs: commit.cursorMs },
            plannedWindows: cursor.plannedWindows.filter((window: PlannedWindow) =>
              remaining.has(windowKey(window)),
            ),
          });
        }
        if (destination?.datasets.includes(dataset)) {
          lagSecondsByDataset[dataset] = Math.max(0, Math.round((nowMs - commit.cursorMs) / 1000));
          if (commit.cursorMs < exportLimit(Date.parse(run.startedAt))) behind = true;
        }
        const committedStats = statsOf(results, dataset, commit.committed);
        if (committedStats !== undefined) stats[dataset] = committedStats;
      } else if (
        writtenSnapshot !== undefined &&
        cursor.plannedSnapshot !== undefined &&
        cursor.plannedSnapshot.date === writtenSnapshot.date
      ) {
        writes.push({
          dataset,
          expected: positionOf(cursor),
          next: { snapshotDate: writtenSnapshot.date },
          plannedSnapshot: null,
        });
        stats[dataset] = {
          rows: writtenSnapshot.rows,
          files: writtenSnapshot.files,
          bytes: writtenSnapshot.bytes,
          snapshotDate: writtenSnapshot.date,
        };
      }
    }

    const advanced = await deps.stateStore.advanceCursors({ lease }, writes, now);
    const runKey = {
      workspaceId: run.workspaceId,
      destinationId: run.destinationId,
      id: run.runId,
      startedAt: run.startedAt,
      isManual: false,
    };
    const totals = Object.values(stats).reduce(
      (sum, s) => ({ rows: sum.rows + s.rows, files: sum.files + s.files, bytes: sum.bytes + s.bytes }),
      { rows: 0, files: 0, bytes: 0 },
    );
    if (!advanced) {
      await deps.stateStore.finishRun(runKey, {
        status: 'failed',
        ...rowFields(totals),
        stats,
        error: SUPERSEDED_NOTE,
        finishedAt: now.toISOString(),
      });
      return { status: 'stopped', runAgain: false };
    }

    const stopReason = stopResult?.stopReason;
    await deps.stateStore.finishRun(runKey, {
      status: 'succeeded',
      ...rowFields(totals),
      stats,
      error: stopReason !== undefined ? STOP_NOTES[stopReason] : null,
      finishedAt: now.toISOString(),
    });

    const runAgain = stopReason === undefined && behind;
    if (destination !== undefined) {
      const nextRunAt =
        runAgain || stopReason === 'config_changed'
          ? now.toISOString()
          : new Date(nextScheduledRun(nowMs, destination.frequency)).toISOString();
      await deps.stateStore.updateRunState(
        run.workspaceId,
        run.destinationId,
        {
          status: 'idle',
          nextRunAt,
          lastRunAt: run.startedAt,
          addRowsExported: totals.rows,
          manualRunQueued: false,
          ...(stopReason === undefined
            ? { lastSuccessAt: now.toISOString(), consecutiveFailures: 0, lastError: null, lastErrorAt: null }
            : {}),
        },
        now,
      );
    }
    deps.metrics.recordRun({
      workspaceId: run.workspaceId,
      destinationId: run.destinationId,
      ...totals,
      durationMs: Math.max(0, nowMs - Date.parse(run.startedAt)),
      lagSecondsByDataset,
    });
    await deps.stateStore.releaseLease(lease);
    return { status: stopReason === undefined ? 'succeeded' : 'stopped', runAgain };
  } catch (error) {
    throw classifyEngineError(error);
  }
}

function rowFields(totals: { rows: number; files: number; bytes: number }) {
  return { rowCount: totals.rows, fileCount: totals.files, byteCount: totals.bytes };
}

/** Rows, files and bytes of the committed windows of a dataset, and the span they cover. */
function statsOf(results: WindowResult[], dataset: string, committed: Window[]): DatasetRunStats | undefined {
  if (committed.length === 0) return undefined;
  const keys = new Set(committed.map(windowKey));
  const stats: DatasetRunStats = {
    rows: 0,
    files: 0,
    bytes: 0,
    fromMs: (committed[0] as Window).fromMs,
    toMs: (committed.at(-1) as Window).toMs,
  };
  for (const result of results) {
    if (result.dataset !== dataset || result.status !== 'written') continue;
    if (!keys.has(`${result.fromMs}-${result.toMs}`)) continue;
    stats.rows += result.rows;
    stats.files += result.files;
    stats.bytes += result.bytes;
  }
  return stats;
}
