import type {
  CursorState,
  CursorWrite,
  DatasetRunStats,
  PlannedSpan,
  RunOutcome,
  WindowProgress,
} from '@sluice/control';
import { progressKey } from '@sluice/control';
import {
  commitEventSpans,
  DatabaseUnavailableError,
  type Dataset,
  type Destination,
  isEventDataset,
  isSnapshotDue,
  type Window,
  windowKey,
} from '@sluice/core';
import { commitBackfill } from './backfill.js';
import { type EngineDeps, resolveDeps } from './deps.js';
import { classifyEngineError, describeFailure } from './errors.js';
import { recordDestinationFailure } from './failure.js';
import { recordOutcomeWithHealth } from './health.js';
import type {
  CommitInput,
  CommitOutput,
  FailedItemResult,
  ItemResult,
  RunRef,
  StopReason,
  WindowResult,
} from './payloads.js';
import { positionOf } from './plan.js';
import { eventCursorMs, exportLimitOf, nextRunOf } from './positions.js';

/** The note a stopped run's record carries in `error` (the run itself counts as succeeded, not failed). */
export const STOP_NOTES: Record<StopReason, string> = {
  paused: 'Stopped before the next file: the export was paused. It continues from here when resumed.',
  deleted: 'Stopped before the next file: the export was deleted.',
  config_changed:
    'Stopped before the next file: the location or credentials changed. The export continues with the new settings.',
  lease_lost:
    'Another run of this export took over before this one finished; its files were kept and it did not move the export position.',
  cancelled: 'Stopped before the next file: the backfill was cancelled.',
};

/** The note of a run whose lease another execution took over: it wrote files but moved no cursor. */
export const SUPERSEDED_NOTE = STOP_NOTES.lease_lost;

/** What the committed state of a run says, per dataset (pure: see {@link planCommit}). */
export interface CommitPlan {
  writes: CursorWrite[];
  /** Rows, files and bytes of the windows (and snapshot) this commit moves over, from their progress. */
  stats: Record<string, DatasetRunStats>;
  /** Seconds between now and each event dataset's export position after the commit. */
  lagSecondsByDataset: Record<string, number>;
  /** Some dataset is still behind the export limit after the commit. */
  behind: boolean;
  /** Progress entries of windows the cursors moved past: deleted after the commit. */
  finished: Pick<WindowProgress, 'dataset' | 'window'>[];
}

/**
 * Which windows are complete and how far each cursor moves. Pure. A window is complete when its stored
 * progress says so (for the run's `configVersion`: files at an older location do not count), or when a
 * writer of this run reported it done (an empty window leaves no progress). Each cursor moves over the
 * contiguous prefix of complete windows of its planned spans only; complete windows after a gap are kept
 * (their progress stays) and committed once the gap is written.
 */
export function planCommit(
  destination: Destination,
  run: Pick<RunRef, 'configVersion'>,
  cursors: ReadonlyMap<Dataset, CursorState>,
  progress: ReadonlyMap<string, WindowProgress>,
  results: readonly ItemResult[],
  nowMs: number,
): CommitPlan {
  const plan: CommitPlan = { writes: [], stats: {}, lagSecondsByDataset: {}, behind: false, finished: [] };
  const written = results.filter((result): result is WindowResult => result.status !== 'failed');
  // Each dataset's job in the history: failed when a writer of it failed; the time its writers spent.
  const jobOf = (dataset: Dataset) => ({
    status: results.some((result) => result.status === 'failed' && result.item.dataset === dataset)
      ? ('failed' as const)
      : ('succeeded' as const),
    durationMs: written
      .filter((result) => result.dataset === dataset)
      .reduce((sum, result) => sum + (result.durationMs ?? 0), 0),
  });
  const isComplete = (dataset: Dataset, window: string): boolean => {
    const entry = progress.get(progressKey(dataset, window));
    return entry?.done === true && entry.configVersion === run.configVersion;
  };
  // A window's progress entries: its own, and those of its child organisations' files (`<window>#<ws>`, an
  // export that includes children), which its own, saved complete last, vouches for.
  const unitsOf = (dataset: Dataset, window: string): WindowProgress[] => {
    const own = progress.get(progressKey(dataset, window));
    const children = [...progress.values()].filter(
      (entry) => entry.dataset === dataset && entry.window.startsWith(`${window}#`),
    );
    return own === undefined ? children : [own, ...children];
  };
  const countsOf = (dataset: Dataset, windows: readonly string[]) => {
    const counts = { rows: 0, files: 0, bytes: 0 };
    for (const window of windows) {
      for (const entry of unitsOf(dataset, window)) {
        counts.rows += entry.rows;
        counts.files += entry.files;
        counts.bytes += entry.bytes;
      }
    }
    return counts;
  };
  for (const dataset of destination.datasets) {
    const cursor = cursors.get(dataset);
    if (isEventDataset(dataset)) {
      const startMs = eventCursorMs(destination, cursor, dataset);
      const reported = written.filter((result) => result.dataset === dataset && result.kind === 'events');
      const done = (window: Window) =>
        isComplete(dataset, windowKey(window)) ||
        reported.some(
          (result) =>
            (result.fromMs ?? Number.POSITIVE_INFINITY) <= window.fromMs &&
            window.toMs <= (result.doneThroughMs ?? Number.NEGATIVE_INFINITY),
        );
      const planned = cursor?.plannedSpans ?? [];
      const commit = commitEventSpans(startMs, planned, done);
      if (commit.committed.length > 0) {
        const runIds = new Map(planned.map((span) => [span.toMs, span.runId]));
        plan.writes.push({
          dataset,
          expected: positionOf(cursor),
          next: { exportedThroughMs: commit.cursorMs },
          plannedSpans: commit.planned.map(
            (span): PlannedSpan => ({ ...span, runId: runIds.get(span.toMs) ?? '' }),
          ),
        });
        for (const window of commit.committed) {
          plan.finished.push({ dataset, window: windowKey(window) });
          for (const unit of unitsOf(dataset, windowKey(window))) {
            if (unit.window !== windowKey(window)) plan.finished.push({ dataset, window: unit.window });
          }
        }
      }
      plan.lagSecondsByDataset[dataset] = Math.max(0, Math.round((nowMs - commit.cursorMs) / 1000));
      if (commit.cursorMs < exportLimitOf(destination, nowMs)) plan.behind = true;
      // Every event dataset has its entry, with no rows when nothing was committed ("No rows").
      plan.stats[dataset] =
        commit.committed.length > 0
          ? {
              ...jobOf(dataset),
              ...countsOf(dataset, commit.committed.map(windowKey)),
              fromMs: (commit.committed[0] as Window).fromMs,
              toMs: commit.cursorMs,
            }
          : { ...jobOf(dataset), rows: 0, files: 0, bytes: 0 };
    } else {
      const date = cursor?.plannedSnapshot?.date;
      if (date === undefined) continue;
      // A snapshot planned and not complete (a failure, a stop, out of time): shown with no rows committed.
      plan.stats[dataset] = { ...jobOf(dataset), rows: 0, files: 0, bytes: 0, snapshotDate: date };
      const complete =
        isComplete(dataset, date) ||
        written.some(
          (result) => result.kind === 'snapshot' && result.date === date && result.status === 'written',
        );
      if (complete) {
        plan.writes.push({
          dataset,
          expected: positionOf(cursor),
          next: { snapshotDate: date },
          plannedSnapshot: null,
        });
        plan.finished.push({ dataset, window: date });
        plan.stats[dataset] = { ...jobOf(dataset), ...countsOf(dataset, [date]), snapshotDate: date };
        // An earlier day's snapshot finished late: today's is due too.
        if (isSnapshotDue(date, nowMs)) plan.behind = true;
      }
    }
  }
  return plan;
}

function sumOf(results: readonly { rows: number; files: number; bytes: number }[]): {
  rows: number;
  files: number;
  bytes: number;
} {
  return results.reduce(
    (sum, r) => ({ rows: sum.rows + r.rows, files: sum.files + r.files, bytes: sum.bytes + r.bytes }),
    { rows: 0, files: 0, bytes: 0 },
  );
}

/**
 * Commit: the last task of an ExportRun. Idempotent: it may run twice (a retry, a duplicate) with the
 * same result, and never overwrites a finished run.
 * 1. A run already finished whose lease is gone: nothing to do (a duplicate). A deleted destination:
 *    release the lease, write nothing (no run record is left behind).
 * 2. Move the cursors over the complete windows ({@link planCommit}) and finish the run record, in one
 *    transaction fenced by the lease and the old positions: the counts and per-dataset stats of the windows
 *    committed (from their progress, so files of an earlier attempt count once, when committed), and the
 *    same rows added to the destination's `totalRowsExported` (once: the record finishes once); `failed`
 *    with the first writer failure's message, else `succeeded` (a stop or expired rows are a note). The
 *    windows written before a failure, a stop or the end of the time budget are committed too. Fenced out:
 *    another execution took over, the run is recorded as superseded.
 * 3. Forget the progress of the committed windows.
 * 4. The destination, in one transaction with the release of the lease: on failure `failed`, `lastError`,
 *    failures + 1 and backoff; otherwise `idle`, `nextRunAt` now when still behind or out of time (else the
 *    next slot), `lastSuccessAt`, failures reset, and a failing destination recovered (its notice published,
 *    `health.ts`). Then the run's metrics.
 * A backfill's run commits the backfill instead (`backfill.ts`).
 */
export async function commitRun(
  input: CommitInput,
  injected: Partial<EngineDeps> = {},
): Promise<CommitOutput> {
  const deps = resolveDeps(injected);
  const { run } = input;
  const results = input.results ?? [];
  try {
    if (run.backfillId !== undefined) return await commitBackfill(input, deps);
    const now = deps.now();
    const nowMs = now.getTime();
    const lease = { workspaceId: run.workspaceId, destinationId: run.destinationId, token: run.leaseToken };
    const runKey = {
      workspaceId: run.workspaceId,
      destinationId: run.destinationId,
      id: run.runId,
      startedAt: run.startedAt,
    };
    const record = await deps.runs.get(runKey);
    if (record !== undefined && record.status !== 'running' && !(await deps.leases.holds({ lease }))) {
      return { status: record.status === 'failed' ? 'failed' : 'succeeded', runAgain: false };
    }
    const destination = await deps.controlStore.getDestination(run.workspaceId, run.destinationId);
    if (destination === undefined) {
      await deps.leases.release(lease);
      return { status: 'stopped', runAgain: false };
    }

    const [cursors, progress] = await Promise.all([
      deps.cursors.get(run.workspaceId, run.destinationId),
      deps.cursors.getProgress(run.workspaceId, run.destinationId),
    ]);
    const plan = planCommit(destination, run, cursors, progress, results, nowMs);
    const totals = sumOf(Object.values(plan.stats));
    const failure = results.find((result): result is FailedItemResult => result.status === 'failed');
    const stopReason = written(results).find((result) => result.status === 'stopped')?.stopReason;
    const note = record?.status === 'running' ? record.error : null;
    const outcome: RunOutcome = {
      status: failure !== undefined ? 'failed' : 'succeeded',
      ...rowFields(totals),
      stats: plan.stats,
      error:
        failure !== undefined
          ? describeFailure(failure.error)
          : stopReason !== undefined
            ? STOP_NOTES[stopReason]
            : note,
      finishedAt: now.toISOString(),
    };
    // The run's outcome is written with the cursor moves it reports, so a retry can never report them as
    // zero rows (once the cursors moved, the same windows are no longer there to count).
    // The destination's `totalRowsExported` takes the rows in the same transaction: the record finishes
    // once (conditional on running), so a Commit retried after this transaction adds nothing more.
    const finish =
      record?.status === 'running'
        ? [
            deps.runs.finishItem(runKey, outcome),
            ...(totals.rows > 0
              ? [deps.runState.addRowsItem(run.workspaceId, run.destinationId, totals.rows)]
              : []),
          ]
        : [];
    if (!(await deps.cursors.advance({ lease }, plan.writes, now, finish))) {
      if (await deps.leases.holds({ lease })) {
        // Still ours, yet a position or the record moved: a duplicate of this Commit got there first.
        // Retried, this Commit reads the moved cursors and the finished record and finds nothing left.
        throw new DatabaseUnavailableError(new Error('cursor moved by a concurrent commit of the same run'));
      }
      await deps.runs.finish(runKey, { ...outcome, status: 'failed', error: SUPERSEDED_NOTE });
      return { status: 'stopped', runAgain: false };
    }
    await deps.cursors.deleteProgress(run.workspaceId, run.destinationId, plan.finished);

    const figures = {
      workspaceId: run.workspaceId,
      destinationId: run.destinationId,
      ...totals,
      durationMs: Math.max(0, nowMs - Date.parse(run.startedAt)),
      lagSecondsByDataset: plan.lagSecondsByDataset,
    };

    if (failure !== undefined) {
      const message = describeFailure(failure.error);
      await recordDestinationFailure(
        { workspaceId: run.workspaceId, destinationId: run.destinationId, run },
        message,
        deps,
        { errorName: failure.error?.Error },
      );
      deps.metrics.recordRun(figures);
      return { status: 'failed', runAgain: false };
    }

    const outOfTime = written(results).some((result) => result.status === 'partial');
    const runAgain = stopReason === undefined && (plan.behind || outOfTime);
    const nextRunAt =
      runAgain || stopReason === 'config_changed'
        ? now.toISOString()
        : new Date(nextRunOf(destination, nowMs)).toISOString();
    const succeeded = {
      status: 'idle',
      nextRunAt,
      lastRunAt: run.startedAt,
      manualRunQueued: false,
      // Every item ran (none failed): the schema objects its first items wrote are in place.
      ...(stopReason === undefined && run.schemaKey !== undefined ? { schemaWritten: run.schemaKey } : {}),
      ...(stopReason === undefined
        ? {
            lastSuccessAt: now.toISOString(),
            consecutiveFailures: 0,
            lastError: note,
            lastErrorAt: note === null ? null : now.toISOString(),
          }
        : {}),
    } as const;
    if (stopReason === undefined) {
      // A success ends a failing streak: recorded with the health change, its notice published.
      await recordOutcomeWithHealth(
        destination,
        { kind: 'succeeded' },
        () => succeeded,
        { lease },
        { releaseLease: true },
        deps,
      );
    } else {
      await deps.runState.update(
        run.workspaceId,
        run.destinationId,
        succeeded,
        now,
        { lease },
        { releaseLease: true },
      );
    }
    deps.metrics.recordRun(figures);
    return { status: stopReason === undefined ? 'succeeded' : 'stopped', runAgain };
  } catch (error) {
    throw classifyEngineError(error);
  }
}

function written(results: readonly ItemResult[]): WindowResult[] {
  return results.filter((result): result is WindowResult => result.status !== 'failed');
}

function rowFields(totals: { rows: number; files: number; bytes: number }) {
  return { rowCount: totals.rows, fileCount: totals.files, byteCount: totals.bytes };
}
