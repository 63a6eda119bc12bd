/** The archive Lambda: the scheduled compaction of the event log into the event archive. */
import { readArchiveConfig } from './config.js';
import { createArchiveFunction } from './function.js';

export const handler = createArchiveFunction(readArchiveConfig(process.env));
