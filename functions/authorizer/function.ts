/** The authorizer function, built from its configuration (`handler.ts` reads it from the environment). */
import type { APIGatewayRequestAuthorizerEventV2 } from 'aws-lambda';
import { ControlStore } from '@sluice/control';
import { type LambdaFunction, lambdaHandler } from '../lambda.js';
import { type AuthorizerResponse, createAuthorizer, logger } from './authorize.js';
import type { AuthorizerConfig } from './config.js';

/** The authorizer's handler over the configured key store. */
export function createAuthorizerFunction(
  config: AuthorizerConfig,
): LambdaFunction<APIGatewayRequestAuthorizerEventV2, AuthorizerResponse> {
  const authorize = createAuthorizer(new ControlStore({ tableName: config.controlTable }), logger);
  return lambdaHandler<APIGatewayRequestAuthorizerEventV2, AuthorizerResponse>(logger, (event) =>
    authorize(event),
  );
}
