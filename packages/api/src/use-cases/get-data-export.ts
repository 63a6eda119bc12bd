import type { Caller } from '../ports.js';
import { type DataExportView, toDataExportView } from '../view.js';
import { loadDestination, type UseCaseDeps } from './deps.js';

/**
 * Returns one data export.
 * 1. Read the destination in the caller's workspace; 404 when absent (another workspace's id included).
 * 2. Return its view.
 */
export async function getDataExport(
  deps: UseCaseDeps,
  caller: Caller,
  id: string,
): Promise<{ success: true; dataExport: DataExportView }> {
  const destination = await loadDestination(deps, caller.workspaceId, id);
  return { success: true, dataExport: toDataExportView(destination) };
}
