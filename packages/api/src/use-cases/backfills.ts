import { randomBytes } from 'node:crypto';
import {
  BACKFILL_ID_RE,
  gridTimingOf,
  type ArchivedSpan,
  type Backfill,
  type BackfillDatasetProgress,
  type BackfillStatus,
  backfillId,
  backfillRange,
  ConflictError,
  type EventDataset,
  FULL_HISTORY_INTERVAL_MS,
  isEventDataset,
  NotFoundError,
  windowCount,
  windowsDoneOf,
} from '@sluice/core';
import { parseBackfillsToken, parseCreateBackfillRequest } from '../backfill-validation.js';
import type { Caller } from '../ports.js';
import { parseRunsLimit } from '../validation.js';
import { loadDestination, type UseCaseDeps } from './deps.js';

/** A backfill as the API returns it (`Backfill` of the OpenAPI document). */
export interface BackfillView {
  id: string;
  destinationId: string;
  status: BackfillStatus;
  fullHistory: boolean;
  datasets: string[];
  from: string;
  to: string;
  progress: Record<string, BackfillDatasetProgress>;
  error: string | null;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
}

/** The API's view of a stored backfill: per dataset, windows done of total, rows, files, bytes. */
export function toBackfillView(backfill: Backfill): BackfillView {
  const { range } = backfill;
  const progress: Record<string, BackfillDatasetProgress> = {};
  for (const dataset of backfill.datasets) {
    const counts = backfill.progress[dataset];
    const done = backfill.doneThroughMs[dataset] ?? range.fromMs;
    progress[dataset] = {
      windowsDone: windowsDoneOf(range, done, backfill.reached[dataset]),
      windowsTotal: windowCount(range.fromMs, range.toMs, range.stepMs),
      rows: counts?.rows ?? 0,
      files: counts?.files ?? 0,
      bytes: counts?.bytes ?? 0,
    };
  }
  return {
    id: backfill.id,
    destinationId: backfill.destinationId,
    status: backfill.status,
    fullHistory: backfill.fullHistory,
    datasets: [...backfill.datasets],
    from: backfill.from,
    to: backfill.to,
    progress,
    error: backfill.error,
    createdAt: backfill.createdAt,
    startedAt: backfill.startedAt,
    finishedAt: backfill.finishedAt,
  };
}

function backfillStore(deps: UseCaseDeps): NonNullable<UseCaseDeps['backfills']> {
  if (deps.backfills === undefined) throw new Error('The API was built without a backfill store.');
  return deps.backfills;
}

/**
 * Queues a backfill: a range (at most 7 days), or the whole history (`"from": "earliest"`).
 * 1. Read the destination (404); a paused one is `409 destination_disabled`.
 * 2. Validate the body (`backfill-validation.ts`): 422 for the wrong shape, 400 for a range that cannot be
 *    exported.
 * 3. Cut the range on the destination's grid (the regular export's windows) and store the backfill, queued
 *    and due now; a second full-history backfill within 30 days is `409 full_history_recent`.
 * 4. Return `{ success, backfill }` (202: the export runs later, beside the regular one).
 */
export async function createBackfill(
  deps: UseCaseDeps,
  caller: Caller,
  id: string,
  body: unknown,
): Promise<{ success: true; backfill: BackfillView }> {
  const destination = await loadDestination(deps, caller.workspaceId, id);
  if (!destination.isEnabled) {
    throw new ConflictError(
      'This data export is paused. Resume it (PATCH with "isEnabled": true) before backfilling it.',
      'destination_disabled',
    );
  }
  const now = deps.now();
  const nowMs = now.getTime();
  const archives = new Map<EventDataset, ArchivedSpan>();
  for (const dataset of destination.datasets) {
    if (!isEventDataset(dataset)) continue;
    const archived = await deps.archiveCoverage?.get(caller.workspaceId, dataset);
    if (archived !== undefined) archives.set(dataset, archived);
  }
  const request = parseCreateBackfillRequest(body, {
    now,
    eventRetentionMs: deps.eventRetentionMs,
    destinationDatasets: destination.datasets,
    archives,
  });
  const iso = now.toISOString();
  const backfill: Backfill = {
    id: backfillId(nowMs, randomBytes(6).toString('hex')),
    workspaceId: caller.workspaceId,
    destinationId: id,
    status: 'queued',
    fullHistory: request.fullHistory,
    datasets: request.datasets,
    from: new Date(request.fromMs).toISOString(),
    to: new Date(request.toMs).toISOString(),
    range: backfillRange(
      request.fromMs,
      request.toMs,
      destination.frequency,
      nowMs,
      gridTimingOf(destination),
    ),
    doneThroughMs: {},
    reached: Object.fromEntries(request.datasets.map((dataset) => [dataset, {}])),
    progress: Object.fromEntries(
      request.datasets.map((dataset) => [dataset, { rows: 0, files: 0, bytes: 0 }]),
    ),
    attempts: 0,
    error: null,
    createdAt: iso,
    startedAt: null,
    finishedAt: null,
    updatedAt: iso,
  };
  const outcome = await backfillStore(deps).create(backfill, {
    fullHistorySince: new Date(nowMs - FULL_HISTORY_INTERVAL_MS).toISOString(),
  });
  if (outcome === 'destination_missing') throw new NotFoundError();
  if (outcome === 'full_history_recent') {
    throw new ConflictError(
      'A full-history backfill of this data export was started in the last 30 days; back-fill a range of up to 7 days instead.',
      'full_history_recent',
    );
  }
  return { success: true, backfill: toBackfillView(backfill) };
}

/**
 * Lists a data export's backfills, newest first, a page at a time (`limit` 1-100, default 20; `nextToken`
 * the last id of the page before). A full page carries the `nextToken` of its last backfill.
 */
export async function listBackfills(
  deps: UseCaseDeps,
  caller: Caller,
  id: string,
  rawLimit: string | undefined,
  rawNextToken: string | undefined,
): Promise<{ success: true; backfills: BackfillView[]; nextToken?: string }> {
  const limit = parseRunsLimit(rawLimit);
  const after = parseBackfillsToken(rawNextToken);
  await loadDestination(deps, caller.workspaceId, id);
  const backfills = await backfillStore(deps).list(caller.workspaceId, id, {
    limit,
    ...(after !== undefined ? { after } : {}),
  });
  const views = backfills.map(toBackfillView);
  const last = views.at(-1);
  if (views.length === limit && last) return { success: true, backfills: views, nextToken: last.id };
  return { success: true, backfills: views };
}

/** One backfill with its per-dataset progress (404 for an unknown id or another export's backfill). */
export async function getBackfill(
  deps: UseCaseDeps,
  caller: Caller,
  id: string,
  backfillIdParam: string,
): Promise<{ success: true; backfill: BackfillView }> {
  if (!BACKFILL_ID_RE.test(backfillIdParam)) throw new NotFoundError();
  await loadDestination(deps, caller.workspaceId, id);
  const backfill = await backfillStore(deps).get(caller.workspaceId, id, backfillIdParam);
  if (backfill === undefined) throw new NotFoundError();
  return { success: true, backfill: toBackfillView(backfill) };
}

/**
 * Cancels a queued or running backfill: a running one stops before its next file. A backfill already
 * finished is `409 backfill_finished`.
 */
export async function cancelBackfill(
  deps: UseCaseDeps,
  caller: Caller,
  id: string,
  backfillIdParam: string,
): Promise<{ success: true; backfill: BackfillView }> {
  if (!BACKFILL_ID_RE.test(backfillIdParam)) throw new NotFoundError();
  await loadDestination(deps, caller.workspaceId, id);
  const result = await backfillStore(deps).cancel(caller.workspaceId, id, backfillIdParam, deps.now());
  if (result === undefined) throw new NotFoundError();
  if (!result.cancelled) {
    throw new ConflictError(
      `This backfill has already ${result.backfill.status === 'cancelled' ? 'been cancelled' : result.backfill.status}; only a queued or running backfill can be cancelled.`,
      'backfill_finished',
    );
  }
  return { success: true, backfill: toBackfillView(result.backfill) };
}

/**
 * Retries a failed backfill without restarting it: queued again, its next runs write only the windows not yet
 * done (a window begun continues from its next file). `404` for an unknown backfill, `409 destination_disabled`
 * for a paused export, `409 backfill_not_failed` unless it failed, `409 full_history_recent` for a full history
 * when another one holds the 30-day allowance. Answers `{ success, backfill }` (202: it runs later).
 */
export async function retryBackfill(
  deps: UseCaseDeps,
  caller: Caller,
  id: string,
  backfillIdParam: string,
): Promise<{ success: true; backfill: BackfillView }> {
  if (!BACKFILL_ID_RE.test(backfillIdParam)) throw new NotFoundError();
  const destination = await loadDestination(deps, caller.workspaceId, id);
  const store = backfillStore(deps);
  const now = deps.now();
  if (!destination.isEnabled) {
    if ((await store.get(caller.workspaceId, id, backfillIdParam)) === undefined) throw new NotFoundError();
    throw new ConflictError(
      'This data export is paused. Resume it (PATCH with "isEnabled": true) before retrying its backfill.',
      'destination_disabled',
    );
  }
  const result = await store.retry(caller.workspaceId, id, backfillIdParam, now, {
    fullHistorySince: new Date(now.getTime() - FULL_HISTORY_INTERVAL_MS).toISOString(),
  });
  if (result.outcome === 'not_found') throw new NotFoundError();
  if (result.outcome === 'full_history_recent') {
    throw new ConflictError(
      'Another full-history backfill of this data export was started in the last 30 days; this one can be retried once it fails, is cancelled or 30 days have passed.',
      'full_history_recent',
    );
  }
  if (result.outcome === 'not_failed') {
    const status = result.backfill.status;
    throw new ConflictError(
      `This backfill is ${status}; only a failed backfill can be retried.`,
      'backfill_not_failed',
    );
  }
  return { success: true, backfill: toBackfillView(result.backfill) };
}
