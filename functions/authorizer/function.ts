/** The authorizer function, built from its configuration (`handler.ts` reads it from the environment). */
import type { APIGatewayRequestAuthorizerEventV2 } from 'aws-lambda';
import { ControlStore } from '@sluice/control';
import { type AuthorizerResponse, createAuthorizer } from './authorize.js';
import type { AuthorizerConfig } from './config.js';

/** The authorizer's handler over the configured key store. */
export function createAuthorizerFunction(
  config: AuthorizerConfig,
): (event: APIGatewayRequestAuthorizerEventV2) => Promise<AuthorizerResponse> {
  const authorize = createAuthorizer(new ControlStore({ tableName: config.controlTable }));
  return (event) => authorize(event);
}
