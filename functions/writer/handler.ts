/**
 * The writer Lambda: one WriteWindow item of the ExportRun Map (an event window or the day's subscriber
 * snapshot) into the customer's bucket. Thin over `@sluice/engine` `writeWindow`, which opens the secret;
 * nothing here logs it or the payload's lease token. Errors leave with their classified `name`.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { ControlStore } from '@sluice/control';
import { type EngineDeps, type WindowResult, type WriteWindowInput, writeWindow } from '@sluice/engine';
import { EventLogReader } from '@sluice/eventlog';
import { SecretSealer } from '@sluice/secrets';
import { config } from './config.js';
import { redactSecrets } from '@sluice/core';

const logger = new Logger({ serviceName: 'sluice-writer', jsonReplacerFn: redactSecrets });
const deps: Partial<EngineDeps> = {
  controlStore: new ControlStore({ tableName: config.controlTable }),
  sealer: new SecretSealer({ keyId: config.kmsKeyId }),
  eventSource: new EventLogReader({
    eventsTable: config.eventsTable,
    subscribersTable: config.subscribersTable,
  }),
};

/** The writer starts no file later than this before its own Lambda timeout: the last file must finish. */
const FILE_MARGIN_MS = 60_000;

/** The writer Lambda's handler. */
export type WriterHandler = (
  event: WriteWindowInput,
  context?: { getRemainingTimeInMillis?: () => number },
) => Promise<WindowResult>;

/**
 * The handler over the function's dependencies with some replaced (tests wrap one, for example a bucket
 * writer that dies after its k-th file, and run this very handler in the local workflows).
 */
export function createWriterHandler(overrides: Partial<EngineDeps> = {}): WriterHandler {
  const handlerDeps = { ...deps, ...overrides };
  return (event, context) => writeOneItem(event, handlerDeps, context);
}

export const handler: WriterHandler = (event, context) => writeOneItem(event, deps, context);

async function writeOneItem(
  event: WriteWindowInput,
  engineDeps: Partial<EngineDeps>,
  context?: { getRemainingTimeInMillis?: () => number },
): Promise<WindowResult> {
  logger.appendKeys({
    workspaceId: event.run.workspaceId,
    destinationId: event.run.destinationId,
    runId: event.run.runId,
  });
  const item =
    event.item.kind === 'events'
      ? {
          dataset: event.item.dataset,
          fromMs: event.item.fromMs,
          toMs: event.item.toMs,
          stepMs: event.item.stepMs,
        }
      : { dataset: event.item.dataset, date: event.item.date };
  try {
    const remaining = context?.getRemainingTimeInMillis?.();
    const result = await writeWindow(
      event,
      engineDeps,
      remaining !== undefined ? { deadlineMs: Date.now() + remaining - FILE_MARGIN_MS } : {},
    );
    logger.info('window done', {
      ...item,
      status: result.status,
      stopReason: result.stopReason,
      rows: result.rows,
      files: result.files,
      bytes: result.bytes,
    });
    return result;
  } catch (error) {
    logger.error('window failed', {
      ...item,
      errorName: (error as Error).name,
      message: (error as Error).message,
    });
    // The error's name and message only: Lambda puts the stack into the Cause, which becomes this Map
    // item's result in the ExportRun state, and a few dozen stacks would crowd its 256 KB.
    if (error instanceof Error) error.stack = `${error.name}: ${error.message}`;
    throw error;
  } finally {
    logger.resetKeys();
  }
}
