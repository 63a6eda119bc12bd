/**
 * The writer function: one WriteWindow item of the ExportRun Map (an event window or the day's subscriber
 * snapshot) into the customer's bucket. Thin over `@sluice/engine` `writeWindow`, which opens the secret;
 * nothing here logs it or the payload's lease token. Errors leave with their classified `name`.
 */
import { BackfillStore, ControlStore, CursorStore, OrganizationStore } from '@sluice/control';
import { createLogger } from '@sluice/core';
import {
  createBucketWriterFactory,
  type EngineDeps,
  engineDeps,
  type WindowResult,
  type WriteWindowInput,
  writeWindow,
} from '@sluice/engine';
import { CachedSecretOpener, SecretSealer } from '@sluice/secrets';
import type { LocalOnlyOptions } from '../api/function.js';
import { type LambdaFunction, lambdaHandler } from '../lambda.js';
import { archivedEventSource } from '../event-source.js';
import type { WriterConfig } from './config.js';

/** The writer starts no file later than this before its own Lambda timeout: the last file must finish. */
const FILE_MARGIN_MS = 60_000;

/** What only the local runtime and tests pass to the writer. */
export interface WriterOptions extends LocalOnlyOptions {
  /**
   * Dependencies replacing the configured ones (tests wrap one, for example a bucket writer that dies after
   * its k-th file, and run this very handler in the local workflows). @default none
   */
  overrides?: Partial<EngineDeps>;
  /** The local s3rver origin holding the archive bucket. @default none: S3 */
  localS3Endpoint?: string;
}

/** The writer Lambda's handler. */
export type WriterHandler = LambdaFunction<WriteWindowInput, WindowResult>;

/** The writer function's handler over the configured stores; only the local runtime and tests pass `options`. */
export function createWriterFunction(config: WriterConfig, options: WriterOptions = {}): WriterHandler {
  const logger = createLogger();
  const deps = engineDeps(
    {
      controlStore: new ControlStore({ tableName: config.controlTable }),
      cursors: new CursorStore({ tableName: config.controlTable }),
      backfills: new BackfillStore({ tableName: config.controlTable }),
      // A backfill's span partitioned by organisation resolves its organisations from the parent's links.
      organizations: new OrganizationStore({ tableName: config.controlTable }),
      // A warm writer opens each destination's secret once per configuration version and 5 minutes.
      sealer: new CachedSecretOpener(new SecretSealer({ keyId: config.kmsKeyId })),
      eventSource: archivedEventSource(config, options.localS3Endpoint),
      bucketWriterFactory: createBucketWriterFactory({
        ...(options.allowedEndpoints ? { allowedEndpoints: options.allowedEndpoints } : {}),
        ...(options.assumeRoles === false ? { assumeRoles: false } : {}),
      }),
      ...options.overrides,
    },
    ['writeWindow'],
  );
  return lambdaHandler<WriteWindowInput, WindowResult>(logger, async (event, context) => {
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
      // Outside Lambda (tests) there may be no clock: then no deadline.
      const remaining = context.getRemainingTimeInMillis?.();
      const result = await writeWindow(
        event,
        deps,
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
        errorMessage: (error as Error).message,
      });
      // The error's name and message only: Lambda puts the stack into the Cause, which becomes this Map
      // item's result in the ExportRun state, and a few dozen stacks would crowd its 256 KB.
      if (error instanceof Error) error.stack = `${error.name}: ${error.message}`;
      throw error;
    }
  });
}
