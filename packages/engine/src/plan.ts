import { randomUUID } from 'node:crypto';
import type {
  ArchiveCoverage,
  CursorState,
  CursorWrite,
  Lease,
  PlannedSpan,
  WindowProgress,
} from '@sluice/control';
import {
  type Dataset,
  type Destination,
  type EventDataset,
  earliestAvailableMs,
  erasAfterPlanning,
  fileFormatOf,
  layoutOf,
  schemaKeyOf,
  gridPointAtOrBefore,
  plannedOrganizations,
  isEventDataset,
  type ChildLink,
  planEventSpans,
  planSnapshot,
  spanWindows,
  windowKey,
} from '@sluice/core';
import { type EngineDeps, exportArchiveCoverage, linksOf, resolveDeps } from './deps.js';
import { classifyEngineError } from './errors.js';
import type { ClaimAndPlanInput, ClaimAndPlanOutput, RunRef, WorkItem } from './payloads.js';
import { claimBackfill } from './backfill.js';
import {
  currentGrid,
  eventCursorMs,
  exactStartMs,
  LEASE_DURATION_MS,
  runIdOf,
  withStart,
} from './positions.js';
import { settleExpiredRun } from './settle.js';

/** Rows that left the event log before this export wrote them: `(fromMs, toMs]` of recorded time. */
export interface ExpiredSpan {
  dataset: EventDataset;
  fromMs: number;
  toMs: number;
}

/** The sentence a run record and `lastError` carry for rows that expired unexported. */
export function expiredNote(spans: readonly ExpiredSpan[], retentionMs: number): string {
  const days = Math.round((retentionMs / 86_400_000) * 10) / 10;
  const parts = spans.map(
    (span) =>
      `${span.dataset} from ${new Date(span.fromMs + 1).toISOString()} to ${new Date(span.toMs).toISOString()}`,
  );
  return (
    `Rows recorded ${parts.join('; ')} left the event log (kept ${days} days) before this export wrote ` +
    'them: the export was paused or failing for longer than that. They cannot be exported; the export continues after them.'
  );
}

/**
 * ClaimAndPlan: the first task of an ExportRun.
 * 1. Read the destination: deleted or paused → skipped.
 * 2. A run that died holding the lease (expired) is settled first: recorded as failed.
 * 3. Claim the lease (conditional, only while the destination exists); another live run holds it → skipped.
 * 4. Plan each dataset from its cursor ({@link planDatasets}): spans of grid windows, reused exactly when
 *    planned before; the subscriber snapshot when today's is due. A cursor behind the event log's retention
 *    moves to it, and the lost span is reported (run record, `lastError`, metric).
 * 5. Store the plan on the cursors (fenced by the lease and the cursors' positions) before anything is
 *    written, so a retry walks exactly these windows.
 * 6. Write the run record (running) and mark the destination running (a queued manual run is taken), both
 *    fenced by the lease.
 * On an error after the claim the lease is released before the error is rethrown (classified).
 * A `backfill` trigger claims and plans a backfill instead (`backfill.ts`).
 */
export async function claimAndPlan(
  input: ClaimAndPlanInput,
  injected: Partial<EngineDeps> = {},
): Promise<ClaimAndPlanOutput> {
  const deps = resolveDeps(injected);
  let lease: Lease | undefined;
  try {
    if (input.trigger === 'backfill') return await claimBackfill(input, deps);
    const now = deps.now();
    const nowMs = now.getTime();
    const destination = await deps.controlStore.getDestination(input.workspaceId, input.destinationId);
    if (destination === undefined) return { outcome: 'skipped', reason: 'deleted' };
    if (!destination.isEnabled) return { outcome: 'skipped', reason: 'paused' };

    const runId = runIdOf(input.executionId);
    const held = await deps.leases.get(input.workspaceId, input.destinationId);
    if (held !== undefined && held.runId !== runId && held.expiresAtMs < nowMs) {
      await settleExpiredRun(held, deps);
    }
    lease = await deps.leases.claim({
      workspaceId: input.workspaceId,
      destinationId: input.destinationId,
      runId,
      token: randomUUID(),
      startedAt: now.toISOString(),
      nowMs,
      durationMs: LEASE_DURATION_MS,
      configVersion: destination.configVersion,
    });
    if (lease === undefined) return { outcome: 'skipped', reason: 'lease_held' };
    const fence = { lease };

    const cursors = await deps.cursors.get(input.workspaceId, input.destinationId);
    const links = await linksOf(destination, deps);
    const archives = await archiveCoverageBehind(destination, cursors, nowMs, deps, links);
    const plan = planDatasets(
      destination,
      cursors,
      runId,
      nowMs,
      deps.settings.eventRetentionMs,
      archives,
      links,
    );
    // Windows a cursor moves past that an earlier run completed (or began) after a gap: their files stay
    // delivered, so their rows join `totalRowsExported` with the move (once: the move is fenced by the
    // cursor's old position) and their progress is forgotten.
    const passed =
      plan.passed.length > 0
        ? progressPassed(await deps.cursors.getProgress(input.workspaceId, input.destinationId), plan.passed)
        : [];
    const passedRows = passed.reduce((sum, entry) => sum + entry.rows, 0);
    const counted =
      passedRows > 0 ? [deps.runState.addRowsItem(input.workspaceId, input.destinationId, passedRows)] : [];
    if (!(await deps.cursors.advance(fence, plan.writes, now, counted))) {
      await deps.leases.release(lease);
      lease = undefined;
      return { outcome: 'skipped', reason: 'lease_lost' };
    }
    if (passed.length > 0) await deps.cursors.deleteProgress(input.workspaceId, input.destinationId, passed);

    const note = plan.expired.length > 0 ? expiredNote(plan.expired, deps.settings.eventRetentionMs) : null;
    for (const span of plan.expired) {
      deps.metrics.recordExpiredRows({
        workspaceId: input.workspaceId,
        destinationId: input.destinationId,
        ...span,
      });
    }
    const isManual = input.trigger === 'manual';
    await deps.runs.start(
      {
        workspaceId: input.workspaceId,
        id: runId,
        destinationId: input.destinationId,
        status: 'running',
        isManual,
        rowCount: 0,
        fileCount: 0,
        byteCount: 0,
        // Zeros for every dataset with work: the writers add their files to these as they go.
        stats: Object.fromEntries(
          plan.items.map((item) => [
            item.dataset,
            { status: 'running', rows: 0, files: 0, bytes: 0, durationMs: 0 },
          ]),
        ),
        error: note,
        startedAt: lease.startedAt,
        finishedAt: null,
      },
      fence,
    );
    await deps.runState.update(
      input.workspaceId,
      input.destinationId,
      {
        status: 'running',
        ...(isManual || destination.manualRunQueued ? { manualRunQueued: false } : {}),
        ...(note !== null ? { lastError: note, lastErrorAt: now.toISOString() } : {}),
      },
      now,
      fence,
    );

    const run: RunRef = {
      workspaceId: input.workspaceId,
      destinationId: input.destinationId,
      runId,
      startedAt: lease.startedAt,
      leaseToken: lease.token,
      configVersion: destination.configVersion,
      deadlineMs: nowMs + deps.settings.runBudgetMs,
    };
    // The schema and recipes beside the data, when the export was created or its datasets, prefix, layout
    // or format changed since they were last written: the first item of each dataset writes them.
    const schemaKey = schemaKeyOf(destination);
    if (schemaKey !== destination.schemaWritten) {
      run.schemaKey = schemaKey;
      const seen = new Set<Dataset>();
      for (const item of plan.items) {
        if (seen.has(item.dataset)) continue;
        seen.add(item.dataset);
        item.schema = true;
      }
    }
    return { outcome: 'planned', run, items: plan.items };
  } catch (error) {
    if (lease !== undefined) await deps.leases.release(lease).catch(() => false);
    throw classifyEngineError(error);
  }
}

/**
 * The event archive's coverage of each event dataset whose cursor is behind the hot log's retention (only
 * those: a current export reads no archive cursor), narrowed by the included children's ({@link exportArchiveCoverage}).
 */
async function archiveCoverageBehind(
  destination: Destination,
  cursors: ReadonlyMap<Dataset, CursorState>,
  nowMs: number,
  deps: EngineDeps,
  links: readonly ChildLink[],
): Promise<Map<EventDataset, ArchiveCoverage>> {
  const horizon = nowMs - deps.settings.eventRetentionMs;
  const archives = new Map<EventDataset, ArchiveCoverage>();
  for (const dataset of destination.datasets) {
    if (!isEventDataset(dataset)) continue;
    if (eventCursorMs(destination, cursors.get(dataset), dataset) >= horizon) continue;
    const coverage = await exportArchiveCoverage(destination, links, dataset, deps);
    if (coverage !== undefined) archives.set(dataset, coverage);
  }
  return archives;
}

/**
 * Where the rows of an event dataset are still available from, on the grid: the hot log's retention horizon,
 * or the archive's start when the archive reaches the hot log (no hour lost between them). An archive that
 * stopped before the hot log's horizon (its compaction failed for longer than the retention: alarmed) is not
 * used: the rows between them are gone.
 */
export function availableFromMs(
  nowMs: number,
  retentionMs: number,
  stepMs: number,
  archive: ArchiveCoverage | undefined,
  phaseMs = 0,
): number {
  return gridPointAtOrBefore(earliestAvailableMs(nowMs, retentionMs, archive), stepMs, phaseMs);
}

/** What {@link planDatasets} decided. */
export interface DatasetsPlan {
  /** The Map items of the run. */
  items: WorkItem[];
  /** The cursor writes that store the plan (and move a cursor past expired rows). */
  writes: CursorWrite[];
  /** Spans of recorded time whose rows expired before this export wrote them. */
  expired: ExpiredSpan[];
  /** Where a cursor moves past expired rows: from its old position to the new one. */
  passed: ExpiredSpan[];
}

/**
 * The progress entries of the windows a cursor moves past (`passed`): those between its old and its new
 * position, so never a window already committed (whose entry may outlive its commit). Pure.
 */
export function progressPassed(
  progress: ReadonlyMap<string, WindowProgress>,
  passed: readonly ExpiredSpan[],
): WindowProgress[] {
  return [...progress.values()].filter((entry) => {
    const window = /^(\d+)-(\d+)(#|$)/.exec(entry.window);
    if (window === null) return false;
    const [fromMs, toMs] = [Number(window[1]), Number(window[2])];
    return passed.some(
      (span) => span.dataset === entry.dataset && span.fromMs <= fromMs && toMs <= span.toMs,
    );
  });
}

/**
 * The work items of a run and the cursor writes that store them as planned. Pure.
 * Each window keeps the file format it was planned with (a retry rewrites it in that format, under the same
 * names); windows planned now take the destination's current format, so a change applies from the next window.
 * An event cursor behind what is still available (the hot log's retention, `nowMs - retentionMs` on the
 * grid, or the event archive's start when the archive reaches the hot log: {@link availableFromMs}) first
 * moves to it: those rows are gone, and the span is reported in `expired`. Rows the archive holds are read
 * from it by the writer's event source, into the same files.
 * An export that includes child organisations fixes in each new span the organisations it reads, with their
 * exact starts and stops (`plannedOrganizations` over `links`, the parent's link history), like its format:
 * a span planned before keeps its own, so a retry or a late run reads the same rows of the same organisations.
 */
export function planDatasets(
  destination: Destination,
  cursors: ReadonlyMap<Dataset, CursorState>,
  runId: string,
  nowMs: number,
  retentionMs: number,
  archives: ReadonlyMap<EventDataset, ArchiveCoverage> = new Map(),
  links: readonly ChildLink[] = [],
): DatasetsPlan {
  const items: WorkItem[] = [];
  const writes: CursorWrite[] = [];
  const expired: ExpiredSpan[] = [];
  const passed: ExpiredSpan[] = [];
  const grid = currentGrid(destination);
  const { stepMs, phaseMs } = grid;
  const currentFormat = grid.format;
  for (const dataset of destination.datasets) {
    const cursor = cursors.get(dataset);
    if (isEventDataset(dataset)) {
      let cursorMs = eventCursorMs(destination, cursor, dataset);
      let stored: PlannedSpan[] = cursor?.plannedSpans ?? [];
      const horizon = plannedHorizon(
        stored,
        availableFromMs(nowMs, retentionMs, stepMs, archives.get(dataset), phaseMs),
      );
      // Rows recorded at or before this are gone: reported exactly, not rounded to the grid. The window
      // holding it was never delivered (the cursor is before it): it is written with the rows recorded after
      // it only, so no row of the reported stretch goes out (an archive that stopped before the hot log's
      // horizon still holds some of its hours: a message's status from there would be a stale last row).
      const lostThroughMs = earliestAvailableMs(nowMs, retentionMs, archives.get(dataset)) - 1;
      const moved = cursorMs < horizon;
      // Reported once: when the cursor moves, or when the window holding the horizon is first planned.
      if (cursorMs < lostThroughMs && (moved || stored.length === 0)) {
        expired.push({ dataset, fromMs: cursorMs, toMs: lostThroughMs });
      }
      if (moved) {
        passed.push({ dataset, fromMs: cursorMs, toMs: horizon });
        cursorMs = horizon;
        // Windows planned before that end after the horizon keep their format, layout, grid and
        // organisations (the horizon is a point of their grid); only those wholly before it are dropped.
        stored = stored
          .filter((span) => span.toMs > horizon)
          .map((span) => (span.fromMs < horizon ? { ...span, fromMs: horizon } : span));
      }
      const plan = planEventSpans({
        cursorMs,
        planned: stored,
        nowMs,
        frequency: destination.frequency,
        phaseMs,
        lagMs: grid.lagMs,
      });
      const earlier = new Map(stored.map((span) => [windowKey(span), span]));
      const planned: PlannedSpan[] = plan.planned.map((span) => {
        const before = earlier.get(windowKey(span));
        // A span planned before keeps its layout (absent: `date`); a new one takes the current layout.
        const layout = before !== undefined ? layoutOf(before) : grid.layout;
        // ... and its organisations (absent: the workspace's own rows, unpartitioned); a new one resolves them now.
        const organizations =
          before !== undefined ? before.organizations : plannedOrganizations(destination, links, span);
        const { organizations: _stored, ...rest } = span;
        return {
          ...rest,
          runId: before?.runId ?? runId,
          format: before?.format ?? currentFormat,
          ...(layout !== 'date' ? { layout } : {}),
          ...(organizations !== undefined ? { organizations } : {}),
        };
      });
      for (const span of planned.slice(0, plan.spans.length)) {
        // The span's organisations stay in the cursor: the item only says that it is partitioned.
        const { runId: _planner, organizations: stays, ...work } = span;
        const item = {
          dataset,
          kind: 'events' as const,
          ...work,
          format: span.format ?? currentFormat,
          ...(stays !== undefined ? { partitioned: true as const } : {}),
        };
        items.push(withStart(item, Math.max(exactStartMs(destination, dataset), lostThroughMs)));
      }
      const eras = erasAfterPlanning(cursor?.eras ?? [], planned);
      const erasChanged = JSON.stringify(eras) !== JSON.stringify(cursor?.eras ?? []);
      const unchanged =
        !moved &&
        !erasChanged &&
        planned.length === stored.length &&
        planned.every((s, i) => s.fromMs === stored[i]?.fromMs && s.toMs === stored[i]?.toMs);
      if (!unchanged) {
        writes.push({
          dataset,
          expected: positionOf(cursor),
          ...(moved ? { next: { exportedThroughMs: cursorMs } } : {}),
          plannedSpans: planned,
          ...(erasChanged ? { eras } : {}),
        });
      }
    } else {
      const date = planSnapshot(cursor?.snapshotDate, cursor?.plannedSnapshot?.date, nowMs);
      if (date === undefined) continue;
      const replanned = cursor?.plannedSnapshot?.date === date;
      const format = replanned ? fileFormatOf(cursor?.plannedSnapshot?.format) : currentFormat;
      items.push({ dataset: 'subscribers', kind: 'snapshot', date, format });
      if (!replanned) {
        writes.push({
          dataset,
          expected: positionOf(cursor),
          plannedSnapshot: { date, runId, format },
        });
      }
    }
  }
  return { items, writes, expired, passed };
}

/**
 * Where a cursor behind `availableMs` (a point of the current grid) moves to: the start of the planned
 * window holding it when one does (a window planned on another grid, before a frequency change), so that
 * window keeps its grid and name and is written with the rows left; else `availableMs`. Pure.
 */
export function plannedHorizon(planned: readonly PlannedSpan[], availableMs: number): number {
  for (const span of planned) {
    if (!(span.fromMs < availableMs && availableMs < span.toMs)) continue;
    const window = spanWindows(span).find((w) => w.fromMs < availableMs && availableMs < w.toMs);
    return window?.fromMs ?? availableMs;
  }
  return availableMs;
}

/** The stored position of a cursor, as a write's expected value. */
export function positionOf(cursor: CursorState | undefined): CursorWrite['expected'] {
  const position: CursorWrite['expected'] = {};
  if (cursor?.exportedThroughMs !== undefined) position.exportedThroughMs = cursor.exportedThroughMs;
  if (cursor?.snapshotDate !== undefined) position.snapshotDate = cursor.snapshotDate;
  return position;
}
