import type { Caller, DataExportRunView } from '../ports.js';
import { parseRunsLimit } from '../validation.js';
import { loadDestination, type UseCaseDeps } from './deps.js';

/**
 * Lists a data export's runs of the last 14 days, newest first.
 * 1. Parse `limit` (integer 1-100, default 20; otherwise `400 invalid_input` on `limit`).
 * 2. Read the destination (404 when absent, so another workspace's runs are never listed).
 * 3. Read at most `limit` runs and return them.
 */
export async function listDataExportRuns(
  deps: UseCaseDeps,
  caller: Caller,
  id: string,
  rawLimit: string | undefined,
): Promise<{ success: true; runs: DataExportRunView[] }> {
  const limit = parseRunsLimit(rawLimit);
  await loadDestination(deps, caller.workspaceId, id);
  const runs = await deps.store.listRuns(caller.workspaceId, id, { limit, now: deps.now() });
  return { success: true, runs: [...runs] };
}
