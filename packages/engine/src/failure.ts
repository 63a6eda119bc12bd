import { nextRunAfterFailure } from '@sluice/core';
import { type EngineDeps, resolveDeps } from './deps.js';
import { classifyEngineError, describeFailure } from './errors.js';
import type { RecordFailureInput, RecordFailureOutput } from './payloads.js';

/**
 * RecordFailure: the Catch of every ExportRun task.
 * 1. Describe the failure for people (from the Cause's classified error; never a stack or a secret).
 * 2. Destination: status failed, `lastError`/`lastErrorAt`, `consecutiveFailures` + 1, `lastRunAt`, and
 *    `nextRunAt` backed off from the frequency, doubling per consecutive failure, at most 6 hours.
 * 3. The run record (when the run got that far): failed, with the message.
 * 4. Release the lease. Planned windows stay on the cursors: the next run rewrites them.
 */
export async function recordFailure(
  input: RecordFailureInput,
  injected: Partial<EngineDeps> = {},
): Promise<RecordFailureOutput> {
  const deps = resolveDeps(injected);
  try {
    const now = deps.now();
    const message = describeFailure(input.error);
    const destination = await deps.controlStore.getDestination(input.workspaceId, input.destinationId);
    let consecutiveFailures = 0;
    let nextRunAt: string | null = null;
    if (destination !== undefined) {
      consecutiveFailures = destination.consecutiveFailures + 1;
      nextRunAt = new Date(
        nextRunAfterFailure(now.getTime(), destination.frequency, consecutiveFailures),
      ).toISOString();
      await deps.stateStore.updateRunState(
        input.workspaceId,
        input.destinationId,
        {
          status: 'failed',
          lastError: message,
          lastErrorAt: now.toISOString(),
          consecutiveFailures,
          nextRunAt,
          lastRunAt: input.run?.startedAt ?? now.toISOString(),
          manualRunQueued: false,
        },
        now,
      );
    }
    if (input.run !== undefined) {
      await deps.stateStore.finishRun(
        {
          workspaceId: input.workspaceId,
          destinationId: input.destinationId,
          id: input.run.runId,
          startedAt: input.run.startedAt,
          isManual: false,
        },
        {
          status: 'failed',
          rowCount: 0,
          fileCount: 0,
          byteCount: 0,
          stats: {},
          error: message,
          finishedAt: now.toISOString(),
        },
      );
      await deps.stateStore.releaseLease({
        workspaceId: input.workspaceId,
        destinationId: input.destinationId,
        token: input.run.leaseToken,
      });
    }
    return { message, consecutiveFailures, nextRunAt };
  } catch (error) {
    throw classifyEngineError(error);
  }
}
