/**
 * The dispatch function: the FindDueDestinations and FindMoreDueDestinations tasks of the Dispatch state
 * machine, one page of the due index a call. Thin over `@sluice/engine` `findDueDestinations`: destinations
 * with nothing new are settled here without a workflow; the ones returned get an ExportRun each.
 */
import { DueIndex } from '@sluice/control';
import { createLogger } from '@sluice/core';
import { engineDeps, type FindDueInput, type FindDueOutput, findDueDestinations } from '@sluice/engine';
import { engineControlStores } from '../control-stores.js';
import { archivedEventSource } from '../event-source.js';
import { type LambdaFunction, lambdaHandler } from '../lambda.js';
import type { DispatchConfig } from './config.js';

/** The dispatch function's handler over the configured stores; only the local runtime passes `options`. */
export function createDispatchFunction(
  config: DispatchConfig,
  options: { localS3Endpoint?: string } = {},
): LambdaFunction<FindDueInput, FindDueOutput> {
  const logger = createLogger();
  const deps = engineDeps(
    {
      ...engineControlStores(config.controlTable),
      dueIndex: new DueIndex({ tableName: config.controlTable }),
      eventSource: archivedEventSource(config, options.localS3Endpoint),
    },
    ['findDueDestinations'],
  );
  return lambdaHandler<FindDueInput, FindDueOutput>(logger, async (event) => {
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
      logger.error('dispatch failed', {
        errorName: (error as Error).name,
        errorMessage: (error as Error).message,
      });
      throw error;
    }
  });
}
