import { failedRunStats } from '@sluice/control';
import { type Destination, nextRunAfterFailure } from '@sluice/core';
import { recordBackfillFailure } from './backfill.js';
import { type EngineDeps, resolveDeps } from './deps.js';
import { classifyEngineError, describeFailure } from './errors.js';
import { recordOutcomeWithHealth } from './health.js';
import type { RecordFailureInput, RecordFailureOutput } from './payloads.js';

/**
 * RecordFailure: the Catch of ClaimAndPlan and Commit (a writer's failure is its Map item's result, and
 * Commit records it after committing what was written).
 * 1. Describe the failure for people (from the Cause's classified error; never a stack or a secret).
 * 2. The run record (when the run got that far): failed, with the message; once only.
 * 3. The destination: status failed, `lastError`/`lastErrorAt`, `consecutiveFailures` + 1, `lastRunAt`,
 *    `nextRunAt` backed off from the frequency (doubling per consecutive failure, at most 6 hours). Fenced:
 *    with a run, only while its lease holds, and the lease is released in the same transaction; without
 *    one (the claim failed), only while no live lease is held, so a duplicate execution never marks a
 *    healthy destination failed. When the fence fails nothing changes (the holder records its own outcome;
 *    a run that died is settled when its lease expires). A customer-caused failure of a healthy destination
 *    also marks it failing, in the same write, and its `failing` notice is published (`health.ts`). A run
 *    begun under an older `configVersion` (the location or credentials changed since) records nothing: it
 *    failed with settings the customer replaced, so it only releases its lease (fenced by the version too).
 * Planned spans and window progress stay: the next run continues them. A backfill's failure is recorded
 * on the backfill only (`backfill.ts`).
 */
export async function recordFailure(
  input: RecordFailureInput,
  injected: Partial<EngineDeps> = {},
): Promise<RecordFailureOutput> {
  const deps = resolveDeps(injected);
  try {
    if (input.trigger === 'backfill' || input.run?.backfillId !== undefined) {
      return await recordBackfillFailure(input, deps);
    }
    const now = deps.now();
    const message = describeFailure(input.error);
    if (input.run !== undefined) {
      const key = {
        workspaceId: input.workspaceId,
        destinationId: input.destinationId,
        id: input.run.runId,
        startedAt: input.run.startedAt,
      };
      const running = await deps.runs.get(key);
      await deps.runs.finish(key, {
        status: 'failed',
        rowCount: 0,
        fileCount: 0,
        byteCount: 0,
        stats: failedRunStats(running),
        error: message,
        finishedAt: now.toISOString(),
      });
    }
    return await recordDestinationFailure(input, message, deps, { errorName: input.error?.Error });
  } catch (error) {
    throw classifyEngineError(error);
  }
}

/**
 * Step 3 of {@link recordFailure}, shared with Commit when a writer failed. `extra.errorName` is the
 * failure's classified name (Step Functions' `Error`): it decides whether the failure is the customer's.
 */
export async function recordDestinationFailure(
  input: Pick<RecordFailureInput, 'workspaceId' | 'destinationId' | 'run'>,
  message: string,
  deps: Pick<EngineDeps, 'controlStore' | 'runState' | 'notices' | 'now'>,
  extra: { errorName?: string } = {},
): Promise<RecordFailureOutput> {
  const now = deps.now();
  const read = await deps.controlStore.getDestination(input.workspaceId, input.destinationId);
  if (read === undefined) return { message, consecutiveFailures: 0, nextRunAt: null };
  const fence =
    input.run !== undefined
      ? {
          lease: {
            workspaceId: input.workspaceId,
            destinationId: input.destinationId,
            token: input.run.leaseToken,
          },
        }
      : { noLiveLeaseAt: now.getTime(), workspaceId: input.workspaceId, destinationId: input.destinationId };
  const nextRunAtOf = (destination: { frequency: Destination['frequency'] }, failures: number) =>
    new Date(nextRunAfterFailure(now.getTime(), destination.frequency, failures)).toISOString();
  // A run begun under an older configuration (the location or credentials changed since) failed with
  // settings the customer has replaced: it releases its lease and records nothing on the destination.
  const run = input.run;
  const stale = (destination: Destination | undefined) =>
    run !== undefined && destination !== undefined && destination.configVersion !== run.configVersion;
  const releaseStale = async (destination: Destination): Promise<RecordFailureOutput> => {
    await deps.runState.update(
      input.workspaceId,
      input.destinationId,
      { ...(destination.status === 'running' ? { status: 'idle' as const } : {}), lastRunAt: run?.startedAt },
      now,
      fence,
      { releaseLease: true },
    );
    return { message, consecutiveFailures: destination.consecutiveFailures, nextRunAt: null };
  };
  if (stale(read)) return releaseStale(read);
  const recorded = await recordOutcomeWithHealth(
    read,
    { kind: 'failed', errorName: extra.errorName, message },
    (destination) => ({
      status: 'failed',
      lastError: message,
      lastErrorAt: now.toISOString(),
      consecutiveFailures: destination.consecutiveFailures + 1,
      nextRunAt: nextRunAtOf(destination, destination.consecutiveFailures + 1),
      lastRunAt: input.run?.startedAt ?? now.toISOString(),
      manualRunQueued: false,
      ...(run !== undefined ? { expectedConfigVersion: run.configVersion } : {}),
    }),
    fence,
    { releaseLease: input.run !== undefined },
    deps,
  );
  if (recorded === undefined) {
    const current =
      run !== undefined
        ? await deps.controlStore.getDestination(run.workspaceId, run.destinationId)
        : undefined;
    if (current !== undefined && stale(current)) return releaseStale(current);
    return { message, consecutiveFailures: read.consecutiveFailures, nextRunAt: null };
  }
  const consecutiveFailures = recorded.consecutiveFailures + 1;
  return { message, consecutiveFailures, nextRunAt: nextRunAtOf(recorded, consecutiveFailures) };
}
