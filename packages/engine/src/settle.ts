import { failedRunStats, type Lease } from '@sluice/control';
import { nextRunAfterFailure } from '@sluice/core';
import type { EngineDeps } from './deps.js';

/** What a run that died outside its Catch is recorded with (run record and `lastError`). */
export const EXPIRED_RUN_MESSAGE =
  'The export run did not finish: it stopped without reporting (its execution timed out or a worker was lost). ' +
  'Sluice will retry and continue after the last file written.';

/**
 * Settles a run whose lease expired while it still held it: the run died outside its Catch (an Express
 * execution timeout, a lost invocation, a RecordFailure that failed itself).
 * 1. Its run record becomes `failed` with {@link EXPIRED_RUN_MESSAGE} (created when the run died before
 *    writing it; a record already finished is left alone).
 * 2. In one transaction, only while that expired lease is still stored: the lease is released and the
 *    destination recorded as failed (`lastError`, `consecutiveFailures` + 1, backoff), so two settlers (or
 *    a settler and a new claim) never count the same death twice.
 * A run claimed under an older `configVersion` (the location or credentials changed since) only has its
 * lease released: no failure, no backoff over the change's fresh start.
 * Windows already written keep their progress: the next run continues them. Returns true when this call
 * settled the destination.
 */
export async function settleExpiredRun(
  lease: Lease,
  deps: Pick<EngineDeps, 'controlStore' | 'runs' | 'runState' | 'leases' | 'now'>,
): Promise<boolean> {
  const now = deps.now();
  const key = {
    workspaceId: lease.workspaceId,
    destinationId: lease.destinationId,
    id: lease.runId,
    startedAt: lease.startedAt,
  };
  const running = await deps.runs.get(key);
  await deps.runs.finish(
    key,
    {
      status: 'failed',
      rowCount: 0,
      fileCount: 0,
      byteCount: 0,
      stats: failedRunStats(running),
      error: EXPIRED_RUN_MESSAGE,
      finishedAt: now.toISOString(),
    },
    { createIfMissing: true },
  );
  const destination = await deps.controlStore.getDestination(lease.workspaceId, lease.destinationId);
  if (destination === undefined) {
    await deps.leases.release(lease);
    return false;
  }
  if (lease.configVersion !== undefined && destination.configVersion !== lease.configVersion) {
    // Begun under settings the customer has since replaced: its end says nothing about the new ones.
    return deps.runState.update(
      lease.workspaceId,
      lease.destinationId,
      {
        ...(destination.status === 'running' ? { status: 'idle' as const } : {}),
        lastRunAt: lease.startedAt,
      },
      now,
      { lease },
      { releaseLease: true },
    );
  }
  const consecutiveFailures = destination.consecutiveFailures + 1;
  return deps.runState.update(
    lease.workspaceId,
    lease.destinationId,
    {
      status: 'failed',
      lastError: EXPIRED_RUN_MESSAGE,
      lastErrorAt: now.toISOString(),
      consecutiveFailures,
      nextRunAt: new Date(
        nextRunAfterFailure(now.getTime(), destination.frequency, consecutiveFailures),
      ).toISOString(),
      lastRunAt: lease.startedAt,
    },
    now,
    { lease },
    { releaseLease: true },
  );
}
