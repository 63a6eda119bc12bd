/**
 * The dispatch Lambda: the FindDueDestinations and FindMoreDueDestinations tasks of the Dispatch state
 * machine, one page of the due index a call. Thin over `@sluice/engine` `findDueDestinations`: destinations
 * with nothing new are settled here without a workflow; the ones returned get an ExportRun each.
 */
import { readDispatchConfig } from './config.js';
import { createDispatchFunction } from './function.js';

export const handler = createDispatchFunction(readDispatchConfig(process.env));
