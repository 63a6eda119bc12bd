/**
 * The run-control Lambda: the ClaimAndPlan, Commit and RecordFailure tasks of the ExportRun state machine,
 * dispatched on `action`. Thin: the steps are `@sluice/engine`'s. Errors leave with their classified
 * `name` (the state machine's Retry/Catch match it) and a message safe to show.
 */
import { readRunControlConfig } from './config.js';
import { createRunControlFunction } from './function.js';

export type { RunControlEvent } from './function.js';

export const handler = createRunControlFunction(readRunControlConfig(process.env));
