import { Logger } from '@aws-lambda-powertools/logger';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { captureOutput, logLinesOf } from '../test/helpers/output-capture.js';
import { lambdaHandler } from './lambda.js';

describe('lambdaHandler', () => {
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  it('puts the request id and the cold-start flag on every line, and resets appended keys after each call', async () => {
    // Prepare: Lambda sets the initialization type; Powertools reports a cold start only with it.
    vi.stubEnv('AWS_LAMBDA_INITIALIZATION_TYPE', 'on-demand');
    vi.stubEnv('POWERTOOLS_SERVICE_NAME', 'sluice-lambda-test');
    const logger = new Logger();
    const handler = lambdaHandler(logger, async (event: { workspaceId?: string; fail?: boolean }) => {
      if (event.workspaceId) logger.appendKeys({ workspaceId: event.workspaceId });
      logger.info('working');
      if (event.fail) throw new Error('failed on purpose');
      return 'ok';
    });
    const output = captureOutput();

    // Act: a call that appends a key and throws, then one that appends none.
    await expect(handler({ workspaceId: 'ws_first', fail: true }, { awsRequestId: 'req-1' })).rejects.toThrow(
      'failed on purpose',
    );
    const second = await handler({}, { awsRequestId: 'req-2' });
    output.stop();

    // Assess
    expect(second).toBe('ok');
    const [first, next] = logLinesOf(output.text(), 'sluice-lambda-test');
    expect(first).toMatchObject({ function_request_id: 'req-1', cold_start: true, workspaceId: 'ws_first' });
    expect(next).toMatchObject({ function_request_id: 'req-2', cold_start: false });
    expect(next).not.toHaveProperty('workspaceId');
  });

  it('takes the service name from POWERTOOLS_SERVICE_NAME', async () => {
    // Prepare
    vi.stubEnv('POWERTOOLS_SERVICE_NAME', 'sluice-from-the-stack');
    const { createLogger } = await import('@sluice/core');
    const logger = createLogger();
    const handler = lambdaHandler(logger, async () => logger.info('hello'));
    const output = captureOutput();

    // Act
    await handler(undefined, { awsRequestId: 'req-3' });
    output.stop();

    // Assess
    expect(logLinesOf(output.text(), 'sluice-from-the-stack')).toEqual([
      expect.objectContaining({ message: 'hello', function_request_id: 'req-3' }),
    ]);
  });
});
