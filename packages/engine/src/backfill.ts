import { randomUUID } from 'node:crypto';
import type { BackfillCommit, CursorState } from '@sluice/control';
import {
  type Backfill,
  backfillRetryDelayMs,
  chunkEndAfter,
  type Dataset,
  type Destination,
  type EventDataset,
  earliestAvailableMs,
  groupEraWindows,
  historyEras,
  isEventDataset,
  MAX_BACKFILL_CHUNK_ATTEMPTS,
  MAX_SPANS_PER_DATASET,
  windowsOfEras,
} from '@sluice/core';
import { type EngineDeps, exportArchiveCoverage, linksOf } from './deps.js';
import { describeFailure } from './errors.js';
import type {
  BackfillSkip,
  ClaimAndPlanInput,
  ClaimAndPlanOutput,
  CommitInput,
  CommitOutput,
  FailedItemResult,
  ItemResult,
  RecordFailureInput,
  RecordFailureOutput,
  RunRef,
  WindowResult,
  WorkItem,
} from './payloads.js';
import type { StepFunctionsError } from './errors.js';
import { currentGrid, eventCursorMs, LEASE_DURATION_MS, runIdOf } from './positions.js';

/**
 * Backfills on the ExportRun machinery (docs/internals.md, "Backfills"): an ExportRun execution with the
 * trigger `backfill` claims the destination's backfill slot instead of its lease, plans the next part of the
 * running (or oldest queued) backfill as the same spans of grid windows the regular export writes, maps the
 * same WriteWindow over them (progress saved on the backfill, per file), and commits the backfill's
 * positions instead of the cursors. The regular cursors, lease and runs are never touched, so a backfill
 * runs beside the regular export. Each run is time-boxed like a regular one; what is left is due again at
 * once, so a long backfill is a chain of short runs, resumable after any failure.
 */

/** What a backfill run writes, and the windows it skips ({@link RunRef.backfillSkipped}). */
export interface BackfillPlan {
  items: WorkItem[];
  skipped: BackfillSkip[];
}

/**
 * The spans a run of `backfill` writes: per dataset, from where it is done to the end of its current chunk
 * (at most seven days), cut exactly as the regular export delivered (or will deliver) those windows: each
 * part on the grid and in the format of its era ({@link historyEras}: the eras the dataset's cursor keeps,
 * then where the regular export continues), grouped into spans of one step and format. A backfill exports
 * every row of its windows, also before the export's start (it is a request for that history). Windows that
 * start before `availableFromMs` (per dataset: rows recorded after it are still available) lost rows: they
 * are skipped and reported, so a delivered file is never replaced by one with fewer rows. Pure.
 * A window of an era partitioned by organisation (the export included children) is `partitioned`: its writer
 * reads the organisations the export includes over it (`withPlannedOrganizations`: `includedOrganizations`
 * with the parent's link history, each child from the later of its link and its entry's addition to the
 * list, to its unlink or its entry's removal), so no payload lists them.
 */
export function planBackfillItems(
  backfill: Backfill,
  destination: Destination,
  cursors: ReadonlyMap<Dataset, CursorState>,
  availableFromMs: (dataset: EventDataset) => number,
): BackfillPlan {
  const { range } = backfill;
  const items: WorkItem[] = [];
  const skipped: BackfillSkip[] = [];
  const current = currentGrid(destination);
  for (const dataset of backfill.datasets) {
    const done = backfill.doneThroughMs[dataset] ?? range.fromMs;
    if (done >= range.toMs) continue;
    const cursor = cursors.get(dataset);
    const plannedEnd = cursor?.plannedSpans.at(-1)?.toMs ?? eventCursorMs(destination, cursor, dataset);
    const eras = historyEras(cursor?.eras ?? [], plannedEnd, current);
    const windows = windowsOfEras(done, chunkEndAfter(range, done), eras);
    const available = availableFromMs(dataset);
    const first = windows.findIndex((window) => window.fromMs >= available);
    const lost = first === -1 ? windows : windows.slice(0, first);
    const [from, to] = [lost[0], lost.at(-1)];
    if (from !== undefined && to !== undefined) {
      skipped.push({ dataset, throughMs: to.toMs, expired: { fromMs: from.fromMs, toMs: to.toMs } });
    }
    for (const { partitioned, ...span } of groupEraWindows(
      windows.slice(lost.length),
      MAX_SPANS_PER_DATASET,
    )) {
      // The writer resolves the organisations of a partitioned span as here (`withPlannedOrganizations`).
      items.push({ dataset, kind: 'events' as const, ...span, ...(partitioned ? { partitioned } : {}) });
    }
  }
  return { items, skipped };
}

/** The note a backfill shows (`error`) for windows it skipped because they lost rows. */
export function backfillExpiredNote(skipped: readonly BackfillSkip[], retentionMs: number): string | null {
  const parts = skipped.flatMap((skip) =>
    skip.expired === undefined
      ? []
      : [
          `${skip.dataset} from ${new Date(skip.expired.fromMs + 1).toISOString()} to ${new Date(skip.expired.toMs).toISOString()}`,
        ],
  );
  if (parts.length === 0) return null;
  const days = Math.round((retentionMs / 86_400_000) * 10) / 10;
  return (
    `Not backfilled: rows recorded ${parts.join('; ')}. Some rows of those windows left the event log ` +
    `(kept ${days} days) before this backfill reached them, and a file already delivered is never ` +
    'replaced by one with fewer rows.'
  );
}

/**
 * ClaimAndPlan of a backfill run.
 * 1. Read the destination: deleted or paused → skipped.
 * 2. Another live run holds the backfill slot → skipped (`lease_held`).
 * 3. Take the running backfill (its run died or ended out of time), else the oldest queued one; none →
 *    skipped (`nothing_due`).
 * 4. Claim the slot for it (it becomes `running` with this run's token), then plan its next spans.
 */
export async function claimBackfill(input: ClaimAndPlanInput, deps: EngineDeps): Promise<ClaimAndPlanOutput> {
  const now = deps.now();
  const nowMs = now.getTime();
  const { workspaceId, destinationId } = input;
  const destination = await deps.controlStore.getDestination(workspaceId, destinationId);
  if (destination === undefined) return { outcome: 'skipped', reason: 'deleted' };
  if (!destination.isEnabled) return { outcome: 'skipped', reason: 'paused' };
  const runId = runIdOf(input.executionId);
  const held = await deps.backfills.getSlot(workspaceId, destinationId);
  if (held !== undefined && held.runId !== runId && held.expiresAtMs >= nowMs) {
    return { outcome: 'skipped', reason: 'lease_held' };
  }
  const active = await deps.backfills.listActive(workspaceId, destinationId);
  const backfill = active.find((b) => b.status === 'running') ?? active.find((b) => b.status === 'queued');
  if (backfill === undefined) return { outcome: 'skipped', reason: 'nothing_due' };
  const slot = await deps.backfills.claim(
    { workspaceId, destinationId, backfillId: backfill.id, datasets: backfill.datasets },
    { backfillId: backfill.id, runId, token: randomUUID(), expiresAtMs: nowMs + LEASE_DURATION_MS },
    now,
  );
  if (slot === undefined) return { outcome: 'skipped', reason: 'lease_held' };
  const cursors = await deps.cursors.get(workspaceId, destinationId);
  const links = await linksOf(destination, deps);
  const available = new Map<EventDataset, number>();
  for (const dataset of backfill.datasets) {
    if (!isEventDataset(dataset)) continue;
    // The children's rows too: the archive of every organisation the export includes must reach them.
    const archive = await exportArchiveCoverage(destination, links, dataset, deps);
    // Rows recorded after this are still there (at or after the earliest available instant).
    available.set(dataset, earliestAvailableMs(nowMs, deps.settings.eventRetentionMs, archive) - 1);
  }
  const plan = planBackfillItems(
    backfill,
    destination,
    cursors,
    (dataset) => available.get(dataset) ?? nowMs,
  );
  const run: RunRef = {
    workspaceId,
    destinationId,
    runId,
    startedAt: now.toISOString(),
    leaseToken: slot.token,
    configVersion: destination.configVersion,
    deadlineMs: nowMs + deps.settings.runBudgetMs,
    backfillId: backfill.id,
    ...(plan.skipped.length > 0 ? { backfillSkipped: plan.skipped } : {}),
  };
  return { outcome: 'planned', run, items: plan.items };
}

/**
 * How far each dataset of a backfill is done after a run's results. Pure. A dataset moves over the
 * contiguous prefix of its spans (in order from where it was) that are written, through the last complete
 * window of the first span that is not; spans after a gap are written again next time (their windows with
 * files are skipped, by their progress).
 */
export function backfillDoneAfter(
  backfill: Backfill,
  results: readonly ItemResult[],
  skipped: readonly BackfillSkip[] = [],
): Backfill['doneThroughMs'] {
  const done: Backfill['doneThroughMs'] = { ...backfill.doneThroughMs };
  for (const dataset of backfill.datasets) {
    let position = done[dataset] ?? backfill.range.fromMs;
    // Windows the plan skipped (before the start, or that lost rows) come first: the backfill moves over them.
    for (const skip of skipped) if (skip.dataset === dataset) position = Math.max(position, skip.throughMs);
    const spans = results
      .filter((r): r is WindowResult => r.status !== 'failed' && r.dataset === dataset && r.kind === 'events')
      .sort((a, b) => (a.fromMs ?? 0) - (b.fromMs ?? 0));
    for (const span of spans) {
      // A gap (a span that failed, so has no result here) stops the dataset where it is.
      if (span.fromMs === undefined || span.toMs === undefined || span.fromMs > position) break;
      if (span.status === 'written') position = Math.max(position, span.toMs);
      else {
        position = Math.max(position, span.doneThroughMs ?? position);
        break;
      }
    }
    done[dataset] = position;
  }
  return done;
}

/**
 * The writers' `reached` entries still beyond the new positions (per dataset; the rest is counted through
 * `doneThroughMs`), so the backfill item stays small however long the backfill. Pure.
 */
export function reachedBeyond(
  backfill: Backfill,
  doneThroughMs: Backfill['doneThroughMs'],
): Backfill['reached'] {
  const kept: Backfill['reached'] = {};
  for (const dataset of backfill.datasets) {
    const done = doneThroughMs[dataset] ?? backfill.range.fromMs;
    const entries = Object.entries(backfill.reached[dataset] ?? {}).filter(([, through]) => through > done);
    kept[dataset] = Object.fromEntries(entries);
  }
  return kept;
}

/**
 * Commit of a backfill run.
 * 1. A deleted backfill or destination: release the slot. Cancelled (a writer stopped): release the slot.
 * 2. Move each dataset over what was written ({@link backfillDoneAfter}).
 * 3. A writer failed after its retries: the chunk's attempts + 1; under the limit the backfill stays
 *    `running`, due again after a backoff (30 s doubling, at most 30 minutes), the message shown in `error`;
 *    at the limit it is `failed`. Otherwise: every dataset done → `succeeded`; else due again at once.
 * 4. Written in one transaction with the release of the slot, fenced by this run's token.
 */
export function commitBackfill(input: CommitInput, deps: EngineDeps): Promise<CommitOutput> {
  const results = input.results ?? [];
  const failure = results.find((result): result is FailedItemResult => result.status === 'failed');
  return settleBackfillRun(input.run, results, failure?.error, deps);
}

/**
 * RecordFailure of a backfill run: ClaimAndPlan or Commit failed after their retries. With a run, its
 * chunk's attempts + 1 and a backoff, as a writer failure in {@link commitBackfill}; without one (the
 * claim failed) nothing is recorded: the backfill stays due and Dispatch tries again. The destination's own
 * state is never touched.
 */
export async function recordBackfillFailure(
  input: RecordFailureInput,
  deps: EngineDeps,
): Promise<RecordFailureOutput> {
  const message = describeFailure(input.error);
  const run = input.run;
  if (run?.backfillId === undefined) return { message, consecutiveFailures: 0, nextRunAt: null };
  await settleBackfillRun(run, [], input.error ?? { Error: 'Error', Cause: message }, deps);
  const backfill = await deps.backfills.get(run.workspaceId, run.destinationId, run.backfillId);
  return {
    message,
    consecutiveFailures: backfill?.attempts ?? 0,
    nextRunAt: backfill?.status === 'running' ? backfill.updatedAt : null,
  };
}

/** Steps 1 to 4 of {@link commitBackfill}, with the run's failure (a writer's, or a task's) if any. */
async function settleBackfillRun(
  run: RunRef,
  results: readonly ItemResult[],
  failure: StepFunctionsError | undefined,
  deps: EngineDeps,
): Promise<CommitOutput> {
  const backfillId = run.backfillId as string;
  const fence = {
    workspaceId: run.workspaceId,
    destinationId: run.destinationId,
    backfillId,
    token: run.leaseToken,
  };
  const now = deps.now();
  const backfill = await deps.backfills.get(run.workspaceId, run.destinationId, backfillId);
  if (backfill === undefined || backfill.status !== 'running') {
    await deps.backfills.release(fence);
    return { status: 'stopped', runAgain: false };
  }
  const doneThroughMs = backfillDoneAfter(backfill, results, run.backfillSkipped);
  const note = backfillExpiredNote(run.backfillSkipped ?? [], deps.settings.eventRetentionMs);
  // A note of skipped windows stays shown until a failure replaces it (after a success, `attempts` is 0).
  const kept = note ?? (backfill.attempts === 0 ? backfill.error : null);
  const reached = reachedBeyond(backfill, doneThroughMs);
  const stopped = results.some((result) => result.status === 'stopped');
  const complete = backfill.datasets.every(
    (dataset: EventDataset) => (doneThroughMs[dataset] ?? backfill.range.fromMs) >= backfill.range.toMs,
  );
  let commit: BackfillCommit;
  if (failure !== undefined) {
    const attempts = backfill.attempts + 1;
    const message = [describeFailure(failure), note].filter((part) => part !== null).join(' ');
    commit =
      attempts >= MAX_BACKFILL_CHUNK_ATTEMPTS
        ? { doneThroughMs, reached, status: 'failed', attempts, error: message, dueAt: null }
        : {
            doneThroughMs,
            reached,
            status: 'running',
            attempts,
            error: message,
            dueAt: new Date(now.getTime() + backfillRetryDelayMs(attempts)).toISOString(),
          };
  } else if (complete) {
    commit = { doneThroughMs, reached, status: 'succeeded', attempts: 0, error: kept, dueAt: null };
  } else {
    commit = {
      doneThroughMs,
      reached,
      status: 'running',
      attempts: 0,
      error: kept,
      dueAt: now.toISOString(),
    };
  }
  if (!(await deps.backfills.commit(fence, commit, now))) return { status: 'stopped', runAgain: false };
  if (commit.status === 'failed') return { status: 'failed', runAgain: false };
  if (stopped && commit.status === 'running') return { status: 'stopped', runAgain: false };
  return { status: 'succeeded', runAgain: commit.status === 'running' && failure === undefined };
}
