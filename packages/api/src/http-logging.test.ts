import { Logger } from '@aws-lambda-powertools/logger';
import { describe, expect, it, vi } from 'vitest';
import { captureOutput, logLinesOf } from '../../../test/helpers/output-capture.js';
import { type ApiHandlerOptions, createApiHandler } from './http.js';

describe('createApiHandler: log lines', () => {
  it('carry the Lambda request id and the cold-start flag, per request', async () => {
    // Prepare: Lambda sets the initialization type; Powertools reports a cold start only with it.
    vi.stubEnv('AWS_LAMBDA_INITIALIZATION_TYPE', 'on-demand');
    const output = captureOutput();
    const api = createApiHandler({
      store: { listDestinations: async () => [] } as unknown as ApiHandlerOptions['store'],
      sealer: {} as ApiHandlerOptions['sealer'],
      logger: new Logger({ serviceName: 'sluice-test-api' }),
    });
    const list = (lambda: object) => ({
      rawPath: '/v1/data-exports',
      requestContext: { requestId: 'gw-1', http: { method: 'GET' }, authorizer: { lambda } },
    });

    // Act
    await api(list({ workspaceId: 'ws_1', role: 'owner', scopes: 'data_exports:read' }), {
      awsRequestId: 'lambda-req-1',
    });
    await api(list({ authError: 'missing_api_key' }), { awsRequestId: 'lambda-req-2' });
    output.stop();
    vi.unstubAllEnvs();

    // Assess
    const lines = logLinesOf(output.text(), 'sluice-test-api');
    expect(lines).toEqual([
      expect.objectContaining({
        message: 'Request',
        function_request_id: 'lambda-req-1',
        cold_start: true,
        workspaceId: 'ws_1',
        statusCode: 200,
      }),
      expect.objectContaining({
        message: 'Request',
        function_request_id: 'lambda-req-2',
        cold_start: false,
        statusCode: 401,
      }),
    ]);
    expect(lines[1]).not.toHaveProperty('workspaceId');
  });
});
