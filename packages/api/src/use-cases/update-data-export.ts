import {
  type BucketLocation,
  childOrganizationsAddedAt,
  childOrganizationsRemoved,
  type Dataset,
  fileFormatOf,
  layoutOf,
  NotFoundError,
  sameFileFormat,
} from '@sluice/core';
import type { BucketCredentials, Caller, ConnectionWarning, DestinationChanges } from '../ports.js';
import { destinationCredentials } from '@sluice/sinks';
import {
  assertCredentialsFit,
  assertCredentialsForMove,
  assertRoleOutsideOwnAccount,
  parseUpdateRequest,
  resolveUpdatedFileFormat,
  resolveUpdatedLocation,
  resolveUpdatedSchedule,
} from '../validation.js';
import { type DataExportView, toDataExportView } from '../view.js';
import { assertDestinationId, loadDestination, type UseCaseDeps, warningsOf } from './deps.js';
import { assertCurrentChildren } from './organizations.js';

const LOCATION_FIELDS = [
  'bucket',
  'region',
  'endpoint',
  'pathPrefix',
] as const satisfies readonly (keyof BucketLocation)[];

/**
 * Updates a data export: rename, datasets, frequency, pause or resume, move, rotate credentials.
 * 1. Validate the body field by field (422 wrong shape, 400 invalid values, credentials only together).
 * 2. Read the destination (404 when absent).
 * 3. Merge the location fields with the stored ones and check the result as a whole. A new bucket, endpoint
 *    or region needs the credentials sent again (`400 invalid_input` naming the fields): the stored secret is
 *    never sent to a host its owner did not give it for.
 * 4. When the location, the server-side encryption or the credentials change: test the connection with the merged configuration (the
 *    stored secret opened when only the path prefix changes); on failure `400 connection_failed`, nothing
 *    changed.
 * 5. Re-seal the secret when credentials change. A role destination may get a new `roleArn` (tested with its
 *    external ID, which never changes); switching between a key and a role is refused (a new export).
 * 6. A location or credential change ends the failure backoff: `consecutiveFailures` 0, a failed status
 *    back to idle, and the next run due now (a run in flight stops at the config version bump, and its
 *    commit schedules the next one).
 * 7. A new `format` or `compression` applies to windows planned from now on: windows already planned keep
 *    the format they were planned with (a retry rewrites them under the same names), so it needs no
 *    `configVersion` bump.
 * 8. Datasets removed lose their cursor; datasets added start now (`datasetStartedAt`) with no cursor, so
 *    one removed and added back does not resume from its old position (the reference: "Newly added event
 *    datasets start from the time of the change"). `isEnabled: false` pauses (off the due index), `true`
 *    resumes, due now. `childOrganizations` must name current children (or be `["*"]`, or `[]` for none); an
 *    entry added starts now (`childOrganizationsAddedAt`), one kept keeps its time, one removed is dropped
 *    from the list and recorded with its times (`childOrganizationsRemoved`).
 * 9. Write everything in one transaction (the destination and the cursors cleared), bumping `configVersion`
 *    on a location or credential change, so a running export stops before its next file; return the view
 *    (with the connection test's `warnings`, when step 4 ran and found any).
 */
export async function updateDataExport(
  deps: UseCaseDeps,
  caller: Caller,
  id: string,
  body: unknown,
): Promise<{ success: true; dataExport: DataExportView; warnings?: ConnectionWarning[] }> {
  assertDestinationId(id);
  const update = parseUpdateRequest(body);
  if (update.roleArn !== undefined) assertRoleOutsideOwnAccount(update.roleArn, deps.ownAccountId);
  const stored = await loadDestination(deps, caller.workspaceId, id);
  if (update.childOrganizations !== undefined) {
    await assertCurrentChildren(deps, caller.workspaceId, update.childOrganizations);
  }
  const now = deps.now();
  const context = { workspaceId: caller.workspaceId, destinationId: stored.id };

  const location = resolveUpdatedLocation(stored, update, deps.endpointPolicy);
  const storedFormat = fileFormatOf(stored);
  const fileFormat = resolveUpdatedFileFormat(storedFormat, update);
  const schedule = resolveUpdatedSchedule(stored, update);
  assertCredentialsFit(stored, location, update);
  assertCredentialsForMove(stored, location, update);
  const role =
    stored.role && update.roleArn !== undefined ? { ...stored.role, roleArn: update.roleArn } : undefined;
  const credentialsChanged =
    update.credentials !== undefined || (role !== undefined && role.roleArn !== stored.role?.roleArn);
  const locationChanged = LOCATION_FIELDS.some((field) => location[field] !== stored[field]);
  // Server-side encryption changes how files are written, not where: tested, applied from the next file.
  const encryptionChanged =
    JSON.stringify(location.encryption ?? null) !== JSON.stringify(stored.encryption ?? null);
  const changes: DestinationChanges = {};
  let warnings: ReturnType<typeof warningsOf> = {};

  if (locationChanged || encryptionChanged || credentialsChanged) {
    const credentials: BucketCredentials =
      update.credentials ??
      (await destinationCredentials({ ...stored, ...(role ? { role } : {}) }, (secret) =>
        deps.sealer.open(secret, context),
      ));
    warnings = warningsOf(await deps.testConnection(location, credentials, { now: () => now }));
    if (role !== undefined) changes.role = role;
    if (update.credentials !== undefined) {
      changes.accessKeyId = update.credentials.accessKeyId;
      changes.secret = await deps.sealer.seal(update.credentials.secretAccessKey, context);
    }
    if (encryptionChanged) changes.encryption = location.encryption ?? null;
    if (locationChanged) {
      for (const field of LOCATION_FIELDS) {
        if (location[field] !== stored[field]) Object.assign(changes, { [field]: location[field] });
      }
    }
  }

  if (update.name !== undefined && update.name !== stored.name) changes.name = update.name;
  if (update.frequency !== undefined && update.frequency !== stored.frequency)
    changes.frequency = update.frequency;
  if (!sameFileFormat(fileFormat, storedFormat)) {
    changes.format = fileFormat.format;
    changes.compression = fileFormat.compression;
  }
  // Like a format, a layout applies from the next planned window (windows keep the layout they were planned
  // with); a schedule from the next run.
  if (schedule.layout !== layoutOf(stored)) changes.layout = schedule.layout;
  if (JSON.stringify(schedule.schedule) !== JSON.stringify(stored.schedule ?? null))
    changes.schedule = schedule.schedule;
  const bumpConfigVersion = locationChanged || credentialsChanged;
  if (bumpConfigVersion) {
    changes.consecutiveFailures = 0;
    changes.nextRunAt = now.toISOString();
    if (stored.status === 'failed') changes.status = 'idle';
  }
  const clearCursorsOf: Dataset[] = [];
  if (update.datasets !== undefined) {
    changes.datasets = update.datasets;
    const added = update.datasets.filter((dataset) => !stored.datasets.includes(dataset));
    const removed = stored.datasets.filter((dataset) => !update.datasets?.includes(dataset));
    // An added dataset may have a cursor left from before it was removed (or from a run in flight then).
    clearCursorsOf.push(...removed, ...added);
    if (added.length > 0) {
      const startedAt = { ...stored.datasetStartedAt };
      for (const dataset of added) startedAt[dataset] = now.toISOString();
      changes.datasetStartedAt = startedAt;
    }
  }
  if (
    update.childOrganizations !== undefined &&
    JSON.stringify(update.childOrganizations) !== JSON.stringify(stored.childOrganizations ?? [])
  ) {
    changes.childOrganizations = update.childOrganizations;
    changes.childOrganizationsAddedAt = childOrganizationsAddedAt(
      stored.childOrganizationsAddedAt,
      update.childOrganizations,
      now.toISOString(),
    );
    // A removed entry keeps its period, so windows planned later still include the child before the removal.
    const removed = childOrganizationsRemoved(
      stored.childOrganizationsRemoved,
      stored.childOrganizationsAddedAt,
      update.childOrganizations,
      now.toISOString(),
    );
    if (removed.length > 0) changes.childOrganizationsRemoved = removed;
  }
  if (update.isEnabled !== undefined && update.isEnabled !== stored.isEnabled) {
    changes.isEnabled = update.isEnabled;
    // Resumed: due now. A paused export is behind by the pause; waiting for its next slot (a day for `daily`)
    // would leave it behind for nothing.
    if (update.isEnabled) changes.nextRunAt = now.toISOString();
  }

  const updated = await deps.store.updateDestination(caller.workspaceId, id, changes, {
    bumpConfigVersion,
    now,
    clearCursorsOf,
  });
  if (updated === undefined) throw new NotFoundError();
  return { success: true, dataExport: toDataExportView(updated), ...warnings };
}
