import type { Caller } from '../ports.js';
import { type DataExportView, toDataExportView } from '../view.js';
import type { UseCaseDeps } from './deps.js';

/**
 * Lists the caller's data exports.
 * 1. Read every destination of the caller's workspace (with per-dataset progress).
 * 2. Return their views, oldest first; never a credential.
 */
export async function listDataExports(
  deps: UseCaseDeps,
  caller: Caller,
): Promise<{ success: true; dataExports: DataExportView[] }> {
  const destinations = await deps.store.listDestinations(caller.workspaceId);
  return { success: true, dataExports: destinations.map(toDataExportView) };
}
