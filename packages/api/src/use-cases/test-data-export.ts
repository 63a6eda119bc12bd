import { destinationCredentials } from '@sluice/sinks';
import type { Caller, ConnectionWarning } from '../ports.js';
import { loadDestination, type UseCaseDeps, warningsOf } from './deps.js';

/**
 * Tests a data export's connection with the stored credentials.
 * 1. Read the destination (404 when absent).
 * 2. Open the sealed secret with the context `{workspaceId, destinationId}` (or take the role to assume).
 * 3. Write `<prefix>/_sluice/connection-test.json` with the export's server-side encryption settings (as its
 *    files are written); a failure is `400 connection_failed` with the reason.
 * 4. Return `{ success, testedAt }`, with the test's `warnings` when it found any. Nothing is stored.
 */
export async function testDataExport(
  deps: UseCaseDeps,
  caller: Caller,
  id: string,
): Promise<{ success: true; testedAt: string; warnings?: ConnectionWarning[] }> {
  const destination = await loadDestination(deps, caller.workspaceId, id);
  const credentials = await destinationCredentials(destination, (secret) =>
    deps.sealer.open(secret, { workspaceId: caller.workspaceId, destinationId: destination.id }),
  );
  const now = deps.now();
  const { provider, bucket, region, endpoint, pathPrefix, encryption } = destination;
  const location = { provider, bucket, region, endpoint, pathPrefix, encryption: encryption ?? null };
  const tested = await deps.testConnection(location, credentials, { now: () => now });
  return { success: true, testedAt: now.toISOString(), ...warningsOf(tested) };
}
