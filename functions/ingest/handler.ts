/** The ingest Lambda's entry point: {@link createIngestFunction} (function.ts) over the configured tables and queue. */
import { readIngestConfig } from './config.js';
import { createIngestFunction } from './function.js';

export { createIngestHandler } from './function.js';

export const handler = createIngestFunction(readIngestConfig(process.env));
