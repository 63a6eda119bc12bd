import { ConflictError, NotFoundError } from '@sluice/core';
import type { Caller } from '../ports.js';
import { type DataExportView, toDataExportView } from '../view.js';
import { loadDestination, type UseCaseDeps } from './deps.js';

/**
 * Queues a run now instead of waiting for the schedule.
 * 1. Read the destination (404 when absent); a paused one is `409 destination_disabled`.
 * 2. Queue it in one conditional write: `queued: false` (nothing changed) when a run is already queued
 *    or running, so no second run starts.
 * 3. Return `{ success, queued, dataExport }`.
 */
export async function runDataExport(
  deps: UseCaseDeps,
  caller: Caller,
  id: string,
): Promise<{ success: true; queued: boolean; dataExport: DataExportView }> {
  const destination = await loadDestination(deps, caller.workspaceId, id);
  if (!destination.isEnabled) throw pausedError();
  const result = await deps.store.queueRun(caller.workspaceId, id, deps.now());
  if (result === undefined) throw new NotFoundError();
  // Paused between the read and the write: the store refused to queue it.
  if (!result.queued && !result.destination.isEnabled) throw pausedError();
  return { success: true, queued: result.queued, dataExport: toDataExportView(result.destination) };
}

function pausedError(): ConflictError {
  return new ConflictError(
    'This data export is paused. Resume it (PATCH with "isEnabled": true) before running it.',
    'destination_disabled',
  );
}
