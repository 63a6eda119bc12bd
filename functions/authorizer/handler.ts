/**
 * The HTTP API Lambda authorizer: API keys to `{workspaceId, role, scopes}`. Thin: the logic, and why it never
 * denies, is in `./authorize.ts`.
 */
import type { APIGatewayRequestAuthorizerEventV2 } from 'aws-lambda';
import { ControlStore } from '@sluice/control';
import { createAuthorizer, type AuthorizerResponse } from './authorize.js';
import { config } from './config.js';

const store = new ControlStore({ tableName: config.controlTable });
const authorize = createAuthorizer(store);

export const handler = (event: APIGatewayRequestAuthorizerEventV2): Promise<AuthorizerResponse> =>
  authorize(event);
