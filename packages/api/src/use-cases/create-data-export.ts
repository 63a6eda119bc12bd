import { type AssumedRole, newDestination, roleSessionName } from '@sluice/core';
import type { Caller } from '../ports.js';
import { assertRoleOutsideOwnAccount, parseCreateRequest } from '../validation.js';
import { type DataExportView, toDataExportView } from '../view.js';
import { type UseCaseDeps, warningsOf } from './deps.js';
import { assertCurrentChildren } from './organizations.js';
import type { ConnectionWarning } from '../ports.js';

/**
 * Creates a data export and queues its first run.
 * 1. Validate the body (422 for the wrong shape, 400 `invalid_input` for invalid values) and apply defaults.
 *    `childOrganizations` must name current children of the workspace (or be `["*"]`): 400 `invalid_input`
 *    at `childOrganizations[i]` otherwise; they start at `startFrom`, like the datasets.
 * 2. Pick a new id `exp_…`.
 * 3. Test the connection first: write `<prefix>/_sluice/connection-test.json` (endpoint resolved and checked
 *    public). On failure, `400 connection_failed` and nothing is saved.
 *    With `roleArn` (refused in Sluice's own account), the test assumes the role through STS with the
 *    workspace's external ID (`externalIdSource`: an HMAC under Sluice's key of the workspace's uid), after a
 *    probe with a wrong one that must be refused: when the trust policy does not allow it yet, the
 *    `connection_failed` message names that ID, and the same create sent again once the customer added it uses
 *    the same ID.
 * 4. Seal the secret with KMS, bound to `{workspaceId, destinationId}` (a role destination has none).
 * 5. Save the destination, counted against `maxExportsPerWorkspace` in the same transaction (beyond it,
 *    `409 limit_exceeded` and nothing is saved; the sealed secret is then simply dropped): enabled, `status` queued, a manual run queued, `nextRunAt` now, every dataset
 *    starting at `startFrom`, `configVersion` 1.
 * 6. Return the `DataExport` view (201), with the connection test's `warnings` when it found any.
 */
export async function createDataExport(
  deps: UseCaseDeps,
  caller: Caller,
  body: unknown,
): Promise<{ success: true; dataExport: DataExportView; warnings?: ConnectionWarning[] }> {
  const now = deps.now();
  const request = parseCreateRequest(body, now, deps.endpointPolicy);
  const sent = request.credentials;
  if ('roleArn' in sent) assertRoleOutsideOwnAccount(sent.roleArn, deps.ownAccountId);
  await assertCurrentChildren(deps, caller.workspaceId, request.childOrganizations);
  const id = deps.newId();
  const role =
    'roleArn' in sent
      ? { roleArn: sent.roleArn, externalId: await deps.externalIdOf(caller.workspaceId) }
      : undefined;
  const credentials =
    'roleArn' in sent ? { ...(role as AssumedRole), sessionName: roleSessionName(id) } : sent;
  const tested = await deps.testConnection(request.location, credentials, { now: () => now });
  const stored =
    'roleArn' in sent
      ? { role }
      : {
          accessKeyId: sent.accessKeyId,
          secret: await deps.sealer.seal(sent.secretAccessKey, {
            workspaceId: caller.workspaceId,
            destinationId: id,
          }),
        };
  const destination = newDestination({
    workspaceId: caller.workspaceId,
    id,
    name: request.name,
    ...request.location,
    ...stored,
    datasets: request.datasets,
    frequency: request.frequency,
    startFrom: request.startFrom,
    fileFormat: request.fileFormat,
    ...(request.layout !== 'date' ? { layout: request.layout } : {}),
    ...(request.schedule !== null ? { schedule: request.schedule } : {}),
    childOrganizations: request.childOrganizations,
    now,
  });
  await deps.store.createDestination(
    destination,
    deps.maxExportsPerWorkspace === undefined ? {} : { maxPerWorkspace: deps.maxExportsPerWorkspace },
  );
  // A new export has exported nothing yet: every dataset's `exportedThrough` is null.
  const created = { ...destination, exportedThrough: {} };
  return { success: true, dataExport: toDataExportView(created), ...warningsOf(tested) };
}
