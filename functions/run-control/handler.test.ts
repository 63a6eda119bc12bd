import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { handler, type RunControlEvent } from './handler.js';

describe('run-control handler', () => {
  it('dispatches on action: a run for a destination that does not exist is skipped', async () => {
    const result = await handler({
      action: 'claimAndPlan',
      workspaceId: `ws_${randomUUID()}`,
      destinationId: 'exp_missing',
      trigger: 'schedule',
      executionId: randomUUID(),
    });
    expect(result).toEqual({ outcome: 'skipped', reason: 'deleted' });
  });

  it('records a failure of a destination that is gone without throwing', async () => {
    const result = await handler({
      action: 'recordFailure',
      workspaceId: `ws_${randomUUID()}`,
      destinationId: 'exp_missing',
      error: {
        Error: 'BucketAccessDenied',
        Cause: JSON.stringify({ errorType: 'BucketAccessDenied', errorMessage: 'Access denied.' }),
      },
    });
    expect(result).toEqual({ message: 'Access denied.', consecutiveFailures: 0, nextRunAt: null });
  });

  it('refuses an unknown action', async () => {
    await expect(handler({ action: 'explode' } as unknown as RunControlEvent)).rejects.toThrow(
      /unknown action/,
    );
  });
});
