/**
 * The ingest Lambda: events on the Sluice bus (`sluice.events`, `sluice.subscribers`) into the event log and
 * subscribers tables. Thin: the envelope contract and the rules are in `@sluice/eventlog` (`bus.ts`,
 * `bus-batch.ts`, `ingest.ts`). Invalid rows and refused envelopes are logged and kept with their reasons in the
 * control table (`sluice events rejected list|redrive`); each bus event publishes its ingest lag and, per
 * workspace, its rejections and drops (`@sluice/eventlog` metrics.ts).
 *
 * The bus rule puts bus events on a Kinesis stream (the buffer, docs/internals.md); the event source mapping
 * invokes this function with a batch of them, which `ingestBusBatch` writes together per workspace (segments of
 * many rows even when producers send one row an entry). A bus event whose write fails on all its attempts goes to
 * the ingest dead-letter queue as Lambda's on-failure record, from where `sluice events redrive` writes it; when
 * that send fails too, its record is reported failed (`ReportBatchItemFailures`) and the mapping retries from it,
 * then discards it with an on-failure record of sequence numbers. A bus event invoked directly (a redrive, or an
 * invocation EventBridge queued before the buffer existed) is ingested alone, as before.
 */
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { Logger } from '@aws-lambda-powertools/logger';
import type { EventBridgeEvent, KinesisStreamBatchResponse, KinesisStreamEvent } from 'aws-lambda';
import {
  type BusEvent,
  type BusIngestOptions,
  type BusIngestResult,
  busEventDeadLetter,
  DynamoRejectedEvents,
  EventLogWriter,
  ingestBusBatch,
  ingestBusEvent,
  powertoolsIngestMetrics,
} from '@sluice/eventlog';
import type { IngestConfig } from './config.js';
import { createLogger } from '@sluice/core';
import { type LambdaFunction, lambdaHandler } from '../lambda.js';

/** Where a bus event given up goes (the ingest dead-letter queue). */
export interface IngestDeadLetters {
  send(body: string): Promise<void>;
}

/** What invokes the function: a batch of the buffer, or one bus event. */
export type IngestEvent = KinesisStreamEvent | EventBridgeEvent<string, unknown>;
export type IngestResponse = KinesisStreamBatchResponse | BusIngestResult;

function isBatch(event: IngestEvent): event is KinesisStreamEvent {
  return Array.isArray((event as Partial<KinesisStreamEvent>).Records);
}

/** The handler over a given writer and logger (the module's `handler` uses the configured tables and queue). */
export function createIngestHandler(
  writer: EventLogWriter,
  logger: Logger,
  options: BusIngestOptions & { deadLetters?: IngestDeadLetters } = {},
): LambdaFunction<IngestEvent, IngestResponse> {
  const { deadLetters, ...ingestOptions } = options;
  return lambdaHandler<IngestEvent, IngestResponse>(logger, async (event, context) => {
    if (!isBatch(event)) return ingestBusEvent(writer, event, logger, ingestOptions);
    const failed: { itemIdentifier: string }[] = [];
    const readable: { sequenceNumber: string; event: BusEvent }[] = [];
    for (const record of event.Records) {
      const text = Buffer.from(record.kinesis.data, 'base64').toString('utf8');
      try {
        readable.push({ sequenceNumber: record.kinesis.sequenceNumber, event: JSON.parse(text) as BusEvent });
      } catch {
        // Not from the bus rule: kept in the queue as it is (redrive reports it unreadable).
        logger.error('A buffer record is not a bus event', { sequenceNumber: record.kinesis.sequenceNumber });
        if (!(await sendDeadLetter(deadLetters, text, logger)))
          failed.push({ itemIdentifier: record.kinesis.sequenceNumber });
      }
    }
    const outcomes = await ingestBusBatch(
      writer,
      readable.map((r) => r.event),
      logger,
      ingestOptions,
    );
    for (const [i, outcome] of outcomes.entries()) {
      if (outcome.ok) continue;
      const body = busEventDeadLetter(readable[i]!.event, outcome.error, {
        functionArn: context.invokedFunctionArn ?? 'unknown',
        requestId: context.awsRequestId ?? 'unknown',
      });
      if (!(await sendDeadLetter(deadLetters, body, logger)))
        failed.push({ itemIdentifier: readable[i]!.sequenceNumber });
    }
    return { batchItemFailures: failed };
  });
}

async function sendDeadLetter(
  deadLetters: IngestDeadLetters | undefined,
  body: string,
  logger: Logger,
): Promise<boolean> {
  if (deadLetters === undefined) return false;
  try {
    await deadLetters.send(body);
    return true;
  } catch (error) {
    logger.error('Could not send a dead letter: the record is reported failed', {
      error: error instanceof Error ? error.message : String(error),
    });
    return false;
  }
}

/** The ingest function over the configured tables, metrics and dead-letter queue (or `deadLetters` given). */
export function createIngestFunction(
  config: IngestConfig,
  options: { deadLetters?: IngestDeadLetters } = {},
): LambdaFunction<IngestEvent, IngestResponse> {
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
  const deadLetters = options.deadLetters ?? sqsDeadLetters(config.deadLetterQueueUrl);
  return createIngestHandler(writer, logger, {
    rejected: new DynamoRejectedEvents({ tableName: config.controlTable }),
    metrics,
    ...(deadLetters !== undefined ? { deadLetters } : {}),
  });
}

function sqsDeadLetters(queueUrl: string | undefined): IngestDeadLetters | undefined {
  if (queueUrl === undefined) return undefined;
  const sqs = new SQSClient({});
  return {
    send: async (body) => {
      await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: body }));
    },
  };
}
