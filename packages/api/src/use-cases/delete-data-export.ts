import { NotFoundError } from '@sluice/core';
import type { Caller } from '../ports.js';
import { assertDestinationId, type UseCaseDeps } from './deps.js';

/**
 * Deletes a data export and its run history; files already written stay in the bucket.
 * 1. Refuse an id that cannot exist (404).
 * 2. Delete the destination, its cursors, lease and runs; 404 when there was none in the caller's workspace.
 * 3. Return `{ success, dataExportId }`.
 */
export async function deleteDataExport(
  deps: UseCaseDeps,
  caller: Caller,
  id: string,
): Promise<{ success: true; dataExportId: string }> {
  assertDestinationId(id);
  const deleted = await deps.store.deleteDestination(caller.workspaceId, id);
  if (!deleted) throw new NotFoundError();
  return { success: true, dataExportId: id };
}
