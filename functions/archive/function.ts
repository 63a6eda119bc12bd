/**
 * The archive function: the scheduled compaction of the event log into the event archive (an EventBridge
 * schedule; locally the scheduler). Thin over `@sluice/archive` `ArchiveCompactor.compactAll`; publishes the
 * lag and failure metrics the archive alarm watches.
 */
import {
  ArchiveBucket,
  ArchiveCompactor,
  type ArchiveMetrics,
  createArchiveClient,
  powertoolsArchiveMetrics,
} from '@sluice/archive';
import { ArchiveCursorStore } from '@sluice/control';
import { createLogger } from '@sluice/core';
import { EventLogReader } from '@sluice/eventlog';
import { type LambdaFunction, lambdaHandler } from '../lambda.js';
import type { ArchiveConfig } from './config.js';

/** The compaction starts no hour later than this before the Lambda's timeout. */
const HOUR_MARGIN_MS = 60_000;
/** Without a Lambda context (locally): how long one compaction may run. */
const LOCAL_BUDGET_MS = 60_000;

/** What one compaction did, in counts. */
export interface ArchiveSummary {
  datasets: number;
  hours: number;
  rows: number;
  bytes: number;
  failures: number;
  /** The largest distance, in seconds, between now and a compacted dataset's archive cursor. */
  lagSeconds: number;
}

/** Options only the local runtime and tests pass. */
export interface ArchiveFunctionOptions {
  /** The local s3rver origin holding the archive bucket. @default none: S3 */
  localS3Endpoint?: string;
  /** @default the Powertools EMF metrics */
  metrics?: ArchiveMetrics;
}

/** The archive function's handler over the configured stores. */
export function createArchiveFunction(
  config: ArchiveConfig,
  options: ArchiveFunctionOptions = {},
): LambdaFunction<unknown, ArchiveSummary> {
  const logger = createLogger();
  const metrics = options.metrics ?? powertoolsArchiveMetrics({ stage: config.stage });
  const compactor = new ArchiveCompactor({
    hot: new EventLogReader({ eventsTable: config.eventsTable, subscribersTable: config.subscribersTable }),
    archive: new ArchiveBucket({
      bucket: config.archiveBucket,
      client: createArchiveClient(
        options.localS3Endpoint !== undefined ? { localEndpoint: options.localS3Endpoint } : {},
      ),
    }),
    cursors: new ArchiveCursorStore({ tableName: config.controlTable }),
    hotRetentionMs: config.eventRetentionMs,
  });
  return lambdaHandler<unknown, ArchiveSummary>(logger, async (_event, context) => {
    const started = Date.now();
    const remaining = context?.getRemainingTimeInMillis?.() ?? LOCAL_BUDGET_MS + HOUR_MARGIN_MS;
    const { results, failures } = await compactor.compactAll(started + remaining - HOUR_MARGIN_MS);
    metrics.recordCompaction({ results, failures, durationMs: Date.now() - started });
    for (const failure of failures) {
      const error = failure.error as Error;
      logger.error('compaction failed', {
        workspaceId: failure.workspaceId,
        dataset: failure.dataset,
        errorName: error?.name,
        errorMessage: error?.message,
      });
    }
    const summary: ArchiveSummary = {
      datasets: results.length,
      hours: results.reduce((sum, r) => sum + r.hours, 0),
      rows: results.reduce((sum, r) => sum + r.rows, 0),
      bytes: results.reduce((sum, r) => sum + r.bytes, 0),
      failures: failures.length,
      lagSeconds: results.reduce((max, r) => Math.max(max, r.lagSeconds), 0),
    };
    logger.info('compacted', { ...summary });
    return summary;
  });
}
