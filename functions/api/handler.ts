/**
 * The Data Exports API function: every route of the HTTP API. Thin: the router, use cases and error handler
 * live in `@sluice/api`; the stores are created once per container.
 */
import type {
  APIGatewayProxyEventV2WithLambdaAuthorizer,
  APIGatewayProxyStructuredResultV2,
} from 'aws-lambda';
import { type AuthorizerContext, createApiHandler } from '@sluice/api';
import { ControlStore } from '@sluice/control';
import { SecretSealer } from '@sluice/secrets';
import { config } from './config.js';

const api = createApiHandler({
  store: new ControlStore({ tableName: config.controlTable }),
  sealer: new SecretSealer({ keyId: config.kmsKeyId }),
});

export const handler = (
  event: APIGatewayProxyEventV2WithLambdaAuthorizer<AuthorizerContext>,
): Promise<APIGatewayProxyStructuredResultV2> => api(event);
