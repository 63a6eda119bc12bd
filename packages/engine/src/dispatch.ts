import { createHash } from 'node:crypto';
import type { CursorState, CursorWrite, DueBackfill, DueEntry, RunRecord } from '@sluice/control';
import {
  alignmentOf,
  type Dataset,
  type Destination,
  type EventDataset,
  erasAfterPlanning,
  forEachConcurrently,
  includedOrganizations,
  hasIncludedChildren,
  isEventDataset,
  organizationIds,
  organizationIntervals,
  isSnapshotDue,
} from '@sluice/core';
import { type EngineDeps, linksOf, ORGANIZATION_CHECKS_AT_ONCE, resolveDeps } from './deps.js';
import { classifyEngineError } from './errors.js';
import type { DueDestination, FindDueInput, FindDueOutput } from './payloads.js';
import { positionOf } from './plan.js';
import {
  currentGrid,
  eventCursorMs,
  exactStartMs,
  exportLimitOf,
  LEASE_DURATION_MS,
  nextRunOf,
} from './positions.js';
import { settleExpiredRun } from './settle.js';

/**
 * Due destinations one FindDueDestinations call examines: one page of the due index. It bounds the state
 * Dispatch carries: a destination is at most ~460 bytes of JSON (two ids of at most 200 characters and a
 * trigger), so a page is at most ~115 KB, under Step Functions' 256 KB with room to spare; with ids of usual
 * length (about 40 characters) it is about 35 KB.
 */
export const DISPATCH_PAGE_SIZE = 250;

/**
 * Destinations of a page examined at once. Each costs 2 (queued) to 9 (nothing new: reads, a fenced cursor
 * advance, the run state, the slot's run record) sequential DynamoDB calls; 50 at once keeps within the SDK's default of 50
 * sockets and makes a page of 250 five rounds of calls (docs/internals.md, "Dispatch at scale").
 */
export const DISPATCH_CONCURRENCY = 50;

/**
 * The most backfill runs one Dispatch execution starts (with its first page): it bounds the state the
 * execution carries beside its page of destinations.
 */
export const DISPATCH_BACKFILL_STARTS = 100;

/**
 * The most due backfill entries one Dispatch execution examines. Every entry examined leaves the due range
 * (started, or set aside until it can start), so entries skipped now never stand in front of another
 * workspace's backfill at the next tick; a queue longer than this is worked through over several ticks.
 */
export const DISPATCH_BACKFILL_EXAMINED = 1_000;

/** How long the backfills of a paused or deleted export are set aside before Dispatch looks again. */
export const PAUSED_BACKFILL_RECHECK_MS = 5 * 60_000;

/** Due entries set aside at once. */
const BACKFILL_SET_ASIDE_CONCURRENCY = 25;

/** What the dispatcher decided for one due destination. */
export type DispatchDecision = 'start' | 'advanced' | 'skipped';

/**
 * FindDueDestinations: one page of the Dispatch state machine's loop, every minute.
 * 1. Read one page of the sparse due index ({@link DISPATCH_PAGE_SIZE} destinations due at `now`, continuing
 *    after `input.next`).
 * 2. Queued (manual) ones start. Others are checked cheaply: planned windows left by a failed or stopped
 *    run, a due subscriber snapshot, or one `hasRowsAfter` Query per event dataset.
 * 3. Nothing new: advance the event cursors to `now - lag` (no file for an empty span; fenced by "no
 *    live lease" and the old positions) and set `nextRunAt` to the destination's next slot, with no workflow;
 *    the slot is recorded in the run history as a run with no rows (one record per slot, `idleRunRecord`).
 * 4. With the first page, the backfills due (`dueBackfillRuns`): one ExportRun with the trigger
 *    `backfill` per destination whose backfill slot is free.
 * 5. The rest: move their due entry ahead by the lease duration (conditional on the entry read, so an
 *    overlapping tick does not start them twice) and return them for an ExportRun each, with `next` when the
 *    index holds more. A destination leaves the `dueAt <= now` range once marked or settled, and the page
 *    token continues after the last entry read, so every due destination is examined once per execution.
 */
export async function findDueDestinations(
  input: FindDueInput = {},
  injected: Partial<EngineDeps> = {},
): Promise<FindDueOutput> {
  const deps = resolveDeps(injected);
  try {
    if (input.next !== undefined && typeof input.next !== 'string') {
      throw new Error('findDue: next must be the page token of the call before');
    }
    const parsed = input.now !== undefined ? Date.parse(input.now) : Number.NaN;
    const now = Number.isFinite(parsed) ? new Date(parsed) : deps.now();
    const page = await deps.dueIndex.queryDuePage(now, { limit: DISPATCH_PAGE_SIZE, after: input.next });
    const destinations: DueDestination[] = [];
    await forEachConcurrently(page.entries, DISPATCH_CONCURRENCY, async (entry) => {
      const started = await dispatchOne(entry, now, deps);
      if (started !== undefined) destinations.push(started);
    });
    // Backfills due (once per execution, with its first page): their runs use the same ExportRun.
    if (input.next === undefined) destinations.push(...(await dueBackfillRuns(now, deps)));
    return page.next === undefined ? { destinations } : { destinations, next: page.next };
  } catch (error) {
    throw classifyEngineError(error);
  }
}

async function dispatchOne(
  entry: DueEntry,
  now: Date,
  deps: EngineDeps,
): Promise<DueDestination | undefined> {
  const nowMs = now.getTime();
  const destination = await deps.controlStore.getDestination(entry.workspaceId, entry.destinationId);
  if (destination === undefined || !destination.isEnabled) return undefined;
  const manual = destination.manualRunQueued || destination.status === 'queued';
  if (!manual) {
    const lease = await deps.leases.get(entry.workspaceId, entry.destinationId);
    if (lease !== undefined && lease.expiresAtMs >= nowMs) return undefined;
    if (lease !== undefined) {
      // The run holding it died outside its Catch: record it as failed, with backoff.
      await settleExpiredRun(lease, deps);
      return undefined;
    }
    const cursors = await deps.cursors.get(entry.workspaceId, entry.destinationId);
    if (!(await needsRun(destination, cursors, nowMs, deps))) {
      await advanceIdle(destination, cursors, entry, now, deps);
      return undefined;
    }
  }
  const marked = await deps.dueIndex.markDispatched(entry, new Date(nowMs + LEASE_DURATION_MS).toISOString());
  if (!marked) return undefined;
  return {
    workspaceId: entry.workspaceId,
    destinationId: entry.destinationId,
    trigger: manual ? 'manual' : 'schedule',
  };
}

/**
 * True when a run has something to write: planned work, a due snapshot, or new rows in some dataset (of an
 * export that includes child organisations, in the workspace's own log or in an included child's, over the
 * time it is included: at most {@link ORGANIZATION_CHECKS_AT_ONCE} children asked at once).
 */
export async function needsRun(
  destination: Destination,
  cursors: ReadonlyMap<Dataset, CursorState>,
  nowMs: number,
  deps: Pick<EngineDeps, 'eventSource' | 'organizations'>,
): Promise<boolean> {
  const limit = exportLimitOf(destination, nowMs);
  const checks: { dataset: Dataset; fromMs: number }[] = [];
  for (const dataset of destination.datasets) {
    const cursor = cursors.get(dataset);
    if (isEventDataset(dataset)) {
      if ((cursor?.plannedSpans.length ?? 0) > 0) return true;
      const fromMs = eventCursorMs(destination, cursor, dataset);
      if (fromMs < limit) checks.push({ dataset, fromMs });
    } else if (isSnapshotDue(cursor?.snapshotDate, nowMs) || cursor?.plannedSnapshot !== undefined) {
      return true;
    }
  }
  for (const check of checks) {
    if (!isEventDataset(check.dataset)) continue;
    if (await deps.eventSource.hasRowsAfter(destination.workspaceId, check.dataset, check.fromMs, limit))
      return true;
  }
  if (checks.length === 0 || !hasIncludedChildren(destination)) return false;
  const links = await linksOf(destination, deps);
  const asks: { id: string; dataset: EventDataset; fromMs: number; toMs: number }[] = [];
  for (const check of checks) {
    if (!isEventDataset(check.dataset)) continue;
    const range = { fromMs: check.fromMs, toMs: limit };
    const entries = includedOrganizations(destination, links, range);
    const startMs = exactStartMs(destination, check.dataset);
    for (const id of organizationIds(entries)) {
      if (id === destination.workspaceId) continue;
      for (const interval of organizationIntervals(entries, id, range, startMs)) {
        asks.push({ id, dataset: check.dataset, ...interval });
      }
    }
  }
  let found = false;
  await forEachConcurrently(asks, ORGANIZATION_CHECKS_AT_ONCE, async (ask) => {
    if (found) return;
    if (await deps.eventSource.hasRowsAfter(ask.id, ask.dataset, ask.fromMs, ask.toMs)) found = true;
  });
  return found;
}

/**
 * The cursor writes that move each event cursor with nothing new to the export limit. The time passed over
 * is the regular export's history on the current grid (empty windows), so the eras record it as planned
 * ({@link erasAfterPlanning}): a backfill of it is cut on that grid, never on the era before (a daily era
 * left open would make it write the day's file with part of a day, over windows later delivered in 5 minutes).
 * Pure.
 */
export function idleAdvanceWrites(
  destination: Destination,
  cursors: ReadonlyMap<Dataset, CursorState>,
  nowMs: number,
): CursorWrite[] {
  const limit = exportLimitOf(destination, nowMs);
  const { lagMs: _lag, ...grid } = currentGrid(destination);
  const writes: CursorWrite[] = [];
  for (const dataset of destination.datasets) {
    if (!isEventDataset(dataset)) continue;
    const cursor = cursors.get(dataset);
    const fromMs = eventCursorMs(destination, cursor, dataset);
    if (fromMs >= limit) continue;
    // As the regular export would have planned it: a cursor off the grid first reaches it on a finer one.
    const align = alignmentOf(fromMs, grid.stepMs, grid.phaseMs);
    const passed = align
      ? [
          { fromMs, toMs: align.toMs, ...grid, stepMs: align.stepMs, phaseMs: 0 },
          { fromMs: align.toMs, toMs: limit, ...grid },
        ]
      : [{ fromMs, toMs: limit, ...grid }];
    const eras = erasAfterPlanning(cursor?.eras ?? [], passed);
    const erasChanged = JSON.stringify(eras) !== JSON.stringify(cursor?.eras ?? []);
    writes.push({
      dataset,
      expected: positionOf(cursor),
      next: { exportedThroughMs: limit },
      plannedSpans: [],
      ...(erasChanged ? { eras } : {}),
    });
  }
  return writes;
}

/** Moves the cursors of a destination with nothing new to `now - lag` and schedules its next slot. */
async function advanceIdle(
  destination: Destination,
  cursors: ReadonlyMap<Dataset, CursorState>,
  entry: DueEntry,
  now: Date,
  deps: EngineDeps,
): Promise<void> {
  const nowMs = now.getTime();
  const writes = idleAdvanceWrites(destination, cursors, nowMs);
  const fence = { noLiveLeaseAt: nowMs, workspaceId: entry.workspaceId, destinationId: entry.destinationId };
  if (!(await deps.cursors.advance(fence, writes, now))) return;
  const settled = await deps.runState.update(
    entry.workspaceId,
    entry.destinationId,
    {
      nextRunAt: new Date(nextRunOf(destination, nowMs)).toISOString(),
      expectedDueAt: entry.dueAt,
      // A run that crashed without its Catch left the status at running; its lease has expired by now.
      ...(destination.status === 'running' ? { status: 'idle' as const } : {}),
    },
    now,
  );
  // The slot still appears in the history: a run with no rows, recorded here, once per slot.
  if (settled) await deps.runs.recordIdle(idleRunRecord(destination, entry, now));
}

/** The slot a due entry stands for: the time it was due (`nextRunAt`), the first part of its `dueAt`. */
export function slotOfDueEntry(entry: Pick<DueEntry, 'dueAt'>): string {
  return entry.dueAt.slice(0, entry.dueAt.indexOf('#'));
}

/**
 * The run record of a scheduled slot with nothing new (the job history's "No rows"): `succeeded`, no rows,
 * each event dataset with no rows. It starts at the slot and its id is derived from the export and the
 * slot, so every Dispatch that settles the same slot writes the same key (recorded once).
 */
export function idleRunRecord(destination: Destination, entry: DueEntry, now: Date): RunRecord {
  const slot = slotOfDueEntry(entry);
  const startedAt = Number.isFinite(Date.parse(slot)) ? slot : now.toISOString();
  const datasets = destination.datasets.filter(isEventDataset);
  return {
    workspaceId: entry.workspaceId,
    id: `run_${createHash('sha256').update(`idle#${entry.destinationId}#${startedAt}`).digest('hex').slice(0, 24)}`,
    destinationId: entry.destinationId,
    status: 'succeeded',
    isManual: false,
    rowCount: 0,
    fileCount: 0,
    byteCount: 0,
    stats: Object.fromEntries(
      datasets.map((dataset) => [
        dataset,
        { status: 'succeeded' as const, rows: 0, files: 0, bytes: 0, durationMs: 0 },
      ]),
    ),
    error: null,
    startedAt,
    finishedAt: now.toISOString(),
  };
}

/**
 * The backfill runs Dispatch starts: at most one per destination with due backfills, when no live run holds
 * its backfill slot and the destination is enabled, at most {@link DISPATCH_BACKFILL_STARTS}. It reads the
 * oldest {@link DISPATCH_BACKFILL_EXAMINED} due entries and decides once per destination, in the order of
 * its oldest entry; every entry it examines leaves the due range:
 * - started: marked dispatched (its due entry moved ahead by the lease duration, conditionally, so
 *   overlapping ticks start it once); the destination's other due entries are set aside as long;
 * - its slot held by a live run: set aside until the slot expires (the running backfill is due again at
 *   its Commit; the claim takes the running or oldest queued backfill, whichever entry started it);
 * - paused or deleted: set aside for {@link PAUSED_BACKFILL_RECHECK_MS}.
 * So one workspace's queue, runnable or not, never keeps another's backfill from starting: bounded work
 * per tick, and each skipped entry is out of the way until it can start.
 */
export async function dueBackfillRuns(
  now: Date,
  injected: Partial<EngineDeps> = {},
): Promise<DueDestination[]> {
  const deps = resolveDeps(injected);
  try {
    const nowMs = now.getTime();
    const due = await deps.backfills.queryDue(now, DISPATCH_BACKFILL_EXAMINED);
    const byDestination = new Map<string, DueBackfill[]>();
    for (const entry of due) {
      const key = `${entry.workspaceId}#${entry.destinationId}`;
      const entries = byDestination.get(key);
      if (entries === undefined) byDestination.set(key, [entry]);
      else entries.push(entry);
    }
    const groups = [...byDestination.values()];
    const starts: DueDestination[] = [];
    let reserved = 0;
    const examine = async (entries: DueBackfill[]): Promise<void> => {
      const [first] = entries as [DueBackfill];
      const slot = await deps.backfills.getSlot(first.workspaceId, first.destinationId);
      if (slot !== undefined && slot.expiresAtMs >= nowMs) {
        return setAside(entries, slot.expiresAtMs + 1, deps);
      }
      const destination = await deps.controlStore.getDestination(first.workspaceId, first.destinationId);
      if (destination === undefined || !destination.isEnabled) {
        return setAside(entries, nowMs + PAUSED_BACKFILL_RECHECK_MS, deps);
      }
      // Runnable, but the starts of this execution are used up: left due, for the next tick.
      if (reserved >= DISPATCH_BACKFILL_STARTS) return;
      reserved++;
      const untilMs = nowMs + LEASE_DURATION_MS;
      if (!(await deps.backfills.markDispatched(first, new Date(untilMs).toISOString()))) {
        // Another execution took it: the rest of its entries are its to handle.
        reserved--;
        return;
      }
      starts.push({
        workspaceId: first.workspaceId,
        destinationId: first.destinationId,
        trigger: 'backfill',
      });
      await setAside(entries.slice(1), untilMs, deps);
    };
    await forEachConcurrently(groups, DISPATCH_CONCURRENCY, examine);
    return starts;
  } catch (error) {
    throw classifyEngineError(error);
  }
}

/** Moves due backfill entries out of the due range until `untilMs` (each conditional on the entry read). */
async function setAside(entries: readonly DueBackfill[], untilMs: number, deps: EngineDeps): Promise<void> {
  const untilIso = new Date(untilMs).toISOString();
  for (let i = 0; i < entries.length; i += BACKFILL_SET_ASIDE_CONCURRENCY) {
    await Promise.all(
      entries
        .slice(i, i + BACKFILL_SET_ASIDE_CONCURRENCY)
        .map((entry) => deps.backfills.markDispatched(entry, untilIso)),
    );
  }
}
