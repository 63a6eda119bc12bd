/**
 * The ingest Lambda: events on the Sluice bus (`sluice.events`, `sluice.subscribers`) into the event log and
 * subscribers tables. Thin: the envelope contract and the rules are in `@sluice/eventlog` (`bus.ts`, `ingest.ts`).
 * Returns the counts; invalid rows and refused envelopes are logged with their reasons. Write failures throw:
 * EventBridge invokes the function asynchronously, so Lambda retries the event twice and then sends it, with the
 * error, to the ingest dead-letter queue (its on-failure destination), from where `sluice events redrive` writes
 * it into the log.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import type { EventBridgeEvent } from 'aws-lambda';
import { type BusIngestResult, EventLogWriter, ingestBusEvent } from '@sluice/eventlog';
import { readIngestConfig } from './config.js';
import { createLogger } from '@sluice/core';
import { type LambdaFunction, lambdaHandler } from '../lambda.js';

/** The handler over a given writer and logger (the module's `handler` uses the configured tables). */
export function createIngestHandler(
  writer: EventLogWriter,
  logger: Logger,
): LambdaFunction<EventBridgeEvent<string, unknown>, BusIngestResult> {
  return lambdaHandler<EventBridgeEvent<string, unknown>, BusIngestResult>(logger, (event) =>
    ingestBusEvent(writer, event, logger),
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

export const handler = createIngestHandler(writer, logger);
