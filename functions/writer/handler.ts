/**
 * The writer Lambda: one WriteWindow item of the ExportRun Map (an event window or the day's subscriber
 * snapshot) into the customer's bucket. Thin over `@sluice/engine` `writeWindow`, which opens the secret;
 * nothing here logs it or the payload's lease token. Errors leave with their classified `name`.
 */
import { readWriterConfig } from './config.js';
import { createWriterFunction } from './function.js';

export const handler = createWriterFunction(readWriterConfig(process.env));
