import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { captureOutput, logLinesOf } from '../../test/helpers/output-capture.js';
import { readRunControlConfig } from './config.js';
import { createRunControlFunction } from './function.js';
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

describe('run-control log lines', () => {
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  it('carry the request id and cold-start flag; one task keeps no key of the one before', async () => {
    // Prepare: a fresh function, as a new Lambda container (the service name is the stack's).
    vi.stubEnv('AWS_LAMBDA_INITIALIZATION_TYPE', 'on-demand');
    vi.stubEnv('POWERTOOLS_SERVICE_NAME', 'sluice-run-control-test');
    const runControl = createRunControlFunction(readRunControlConfig(process.env));
    const workspaceId = `ws_${randomUUID()}`;
    const output = captureOutput();

    // Act: a task that names a workspace, then one that fails before naming any.
    await runControl(
      {
        action: 'claimAndPlan',
        workspaceId,
        destinationId: 'exp_missing',
        trigger: 'schedule',
        executionId: randomUUID(),
      },
      { awsRequestId: 'req-claim' },
    );
    await expect(
      runControl({ action: 'explode' } as unknown as RunControlEvent, { awsRequestId: 'req-explode' }),
    ).rejects.toThrow(/unknown action/);
    output.stop();

    // Assess
    const lines = logLinesOf(output.text(), 'sluice-run-control-test');
    expect(lines).toEqual([
      expect.objectContaining({
        message: 'claimed and planned',
        function_request_id: 'req-claim',
        cold_start: true,
        workspaceId,
        action: 'claimAndPlan',
      }),
      expect.objectContaining({
        message: 'run-control failed',
        function_request_id: 'req-explode',
        cold_start: false,
        action: 'explode',
      }),
    ]);
    expect(lines[1]).not.toHaveProperty('workspaceId');
    expect(output.text()).not.toContain('No application metrics to publish');
  });
});
