import type { Caller, DataExportRunView } from '../ports.js';
import { encodeRunsToken, parseRunsLimit, parseRunsToken } from '../validation.js';
import { loadDestination, type UseCaseDeps } from './deps.js';

/**
 * Lists a data export's runs of the last 14 days, newest first, a page at a time.
 * 1. Parse `limit` (integer 1-100, default 20) and `nextToken` (absent, or one this API returned); otherwise
 *    `400 invalid_input` on that parameter.
 * 2. Read the destination (404 when absent, so another workspace's runs are never listed).
 * 3. Read at most `limit` runs below the token's run. A full page carries the `nextToken` of its last run
 *    (the page after it may be empty); a shorter one is the last and carries none.
 */
export async function listDataExportRuns(
  deps: UseCaseDeps,
  caller: Caller,
  id: string,
  rawLimit: string | undefined,
  rawNextToken?: string,
): Promise<{ success: true; runs: DataExportRunView[]; nextToken?: string }> {
  const limit = parseRunsLimit(rawLimit);
  const after = parseRunsToken(rawNextToken);
  await loadDestination(deps, caller.workspaceId, id);
  const runs = await deps.store.listRuns(caller.workspaceId, id, {
    limit,
    now: deps.now(),
    ...(after ? { after } : {}),
  });
  const last = runs.at(-1);
  if (runs.length === limit && last)
    return { success: true, runs: [...runs], nextToken: encodeRunsToken(last) };
  return { success: true, runs: [...runs] };
}
