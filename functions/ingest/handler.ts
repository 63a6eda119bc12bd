/**
 * The ingest Lambda: events on the Sluice bus (`sluice.events`, `sluice.subscribers`) into the event log and
 * subscribers tables. Thin: the envelope contract and the rules are in `@sluice/eventlog` (`bus.ts`, `ingest.ts`).
 * Returns the counts. Invalid rows and refused envelopes are logged and kept with their reasons in the control
 * table (`sluice events rejected list|redrive`); each bus event publishes its ingest lag and, per workspace,
 * its rejections and drops (`@sluice/eventlog` metrics.ts). Write failures throw:
 * EventBridge invokes the function asynchronously, so Lambda retries the event twice and then sends it, with the
 * error, to the ingest dead-letter queue (its on-failure destination), from where `sluice events redrive` writes
 * it into the log.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import type { EventBridgeEvent } from 'aws-lambda';
import {
  type BusIngestOptions,
  type BusIngestResult,
  DynamoRejectedEvents,
  EventLogWriter,
  ingestBusEvent,
  powertoolsIngestMetrics,
} from '@sluice/eventlog';
import { readIngestConfig } from './config.js';
import { createLogger } from '@sluice/core';
import { type LambdaFunction, lambdaHandler } from '../lambda.js';

/** The handler over a given writer and logger (the module's `handler` uses the configured tables). */
export function createIngestHandler(
  writer: EventLogWriter,
  logger: Logger,
  options: BusIngestOptions = {},
): LambdaFunction<EventBridgeEvent<string, unknown>, BusIngestResult> {
  return lambdaHandler<EventBridgeEvent<string, unknown>, BusIngestResult>(logger, (event) =>
    ingestBusEvent(writer, event, logger, options),
  );
}

const config = readIngestConfig(process.env);
const logger = createLogger();
const writer = new EventLogWriter({
  eventsTable: config.eventsTable,
  subscribersTable: config.subscribersTable,
  logger,
  retentionSeconds: config.retentionSeconds,
  // On the bus, recorded time is always the ingest's own clock: a producer's `recorded_at` is ignored.
  explicitRecordedAt: 'ignore',
});

const metrics = powertoolsIngestMetrics(undefined, config.stage ? { stage: config.stage } : {});
export const handler = createIngestHandler(writer, logger, {
  rejected: new DynamoRejectedEvents({ tableName: config.controlTable }),
  metrics,
});
