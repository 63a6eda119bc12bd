/**
 * The Data Exports API function: every route of the HTTP API. Thin: the router, use cases and error handler
 * live in `@sluice/api`; the stores are created once per container, from the environment read at load.
 */
import { readApiConfig } from './config.js';
import { createApiFunction } from './function.js';

export const handler = createApiFunction(readApiConfig(process.env));
