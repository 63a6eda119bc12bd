/**
 * The dispatch Lambda: the FindDueDestinations and FindMoreDueDestinations tasks of the Dispatch state
 * machine, one page of the due index a call. Thin over `@sluice/engine` `findDueDestinations`: destinations
 * with nothing new are settled here without a workflow; the ones returned get an ExportRun each.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { ControlStore, CursorStore, DueIndex, LeaseStore, RunStateStore, RunStore } from '@sluice/control';
import { type EngineDeps, type FindDueInput, type FindDueOutput, findDueDestinations } from '@sluice/engine';
import { EventLogReader } from '@sluice/eventlog';
import { config } from './config.js';
import { redactSecrets } from '@sluice/core';

const logger = new Logger({ serviceName: 'sluice-dispatch', jsonReplacerFn: redactSecrets });
const deps: Partial<EngineDeps> = {
  controlStore: new ControlStore({ tableName: config.controlTable }),
  leases: new LeaseStore({ tableName: config.controlTable }),
  cursors: new CursorStore({ tableName: config.controlTable }),
  runs: new RunStore({ tableName: config.controlTable }),
  runState: new RunStateStore({ tableName: config.controlTable }),
  dueIndex: new DueIndex({ tableName: config.controlTable }),
  eventSource: new EventLogReader({
    eventsTable: config.eventsTable,
    subscribersTable: config.subscribersTable,
  }),
};

export const handler = async (event: FindDueInput): Promise<FindDueOutput> => {
  try {
    const result = await findDueDestinations(event ?? {}, deps);
    if (result.destinations.length > 0) {
      // Counts only: a page holds up to 250 destinations, and each ExportRun's input names its own.
      logger.info('starting export runs', {
        count: result.destinations.length,
        morePages: result.next !== undefined,
      });
    }
    return result;
  } catch (error) {
    logger.error('dispatch failed', { errorName: (error as Error).name, message: (error as Error).message });
    throw error;
  }
};
