/**
 * The functions' factories and configuration readers, for the local runtime (`@sluice/local`), which builds the
 * same handlers as Lambda. Lambda bundles each `<name>/handler.ts` on its own; nothing deployed imports this file.
 */
export { readApiConfig } from './api/config.js';
export { createApiFunction } from './api/function.js';
export { readArchiveConfig } from './archive/config.js';
export { createArchiveFunction } from './archive/function.js';
export { readAuthorizerConfig } from './authorizer/config.js';
export { createAuthorizerFunction } from './authorizer/function.js';
export { readDispatchConfig } from './dispatch/config.js';
export { createDispatchFunction } from './dispatch/function.js';
export type { Env } from './env.js';
export { readIngestConfig } from './ingest/config.js';
export { createIngestFunction, type IngestDeadLetters } from './ingest/function.js';
export { readRunControlConfig } from './run-control/config.js';
export { createRunControlFunction } from './run-control/function.js';
export { readWriterConfig } from './writer/config.js';
export { createWriterFunction } from './writer/function.js';
