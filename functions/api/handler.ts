/**
 * The Data Exports API function: every route of the HTTP API. Thin: the router, use cases and error handler
 * live in `@sluice/api`; the stores are created once per container.
 */
import type {
  APIGatewayProxyEventV2WithLambdaAuthorizer,
  APIGatewayProxyStructuredResultV2,
} from 'aws-lambda';
import { type AuthorizerContext, createApiHandler } from '@sluice/api';
import { ApiKeyMeter, ControlStore } from '@sluice/control';
import { SecretSealer } from '@sluice/secrets';
import { createAuthorizer } from '../authorizer/authorize.js';
import { config } from './config.js';

const store = new ControlStore({ tableName: config.controlTable });
const authorizeAgain = createAuthorizer(store);

const api = createApiHandler({
  store,
  sealer: new SecretSealer({ keyId: config.kmsKeyId }),
  keyMeter: new ApiKeyMeter({ tableName: config.controlTable, limit: config.apiKeyRateLimit }),
  // The gateway caches a verdict for up to a minute: a cached "store unavailable" is checked again here.
  recheckKey: async (request) => (await authorizeAgain({ headers: request.headers })).context,
});

export const handler = (
  event: APIGatewayProxyEventV2WithLambdaAuthorizer<AuthorizerContext>,
): Promise<APIGatewayProxyStructuredResultV2> => api(event);
