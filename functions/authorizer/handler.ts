/**
 * The HTTP API Lambda authorizer: API keys to `{workspaceId, role, scopes}`. Thin: the logic, and why it never
 * denies, is in `./authorize.ts`.
 */
import { readAuthorizerConfig } from './config.js';
import { createAuthorizerFunction } from './function.js';

export const handler = createAuthorizerFunction(readAuthorizerConfig(process.env));
