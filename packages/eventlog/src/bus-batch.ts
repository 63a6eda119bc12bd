/**
 * A batch of bus events, as the buffer between the bus and ingest delivers them: the `sluice.events` envelopes of
 * one workspace are written by one {@link EventLogWriter.ingestEvents} call, so producers that send one row an
 * entry still get segments of many rows. Everything else, and every envelope of a group whose write failed, goes
 * through {@link ingestBusEvent} one by one: the same rules, one way to ingest a bus event. An envelope whose write
 * still fails after {@link BUS_EVENT_ATTEMPTS} attempts is returned as failed, for the caller to dead-letter.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import {
  type BusEvent,
  type BusIngestOptions,
  type BusIngestResult,
  type BusWriter,
  EVENTS_DETAIL_TYPE,
  ingestBusEvent,
  workspaceSource,
} from './bus.js';
import type { IngestResult } from './ingest.js';
// readDeadLetter (redrive.ts) reads what busEventDeadLetter writes.

/** Attempts at one bus event before it is given up (as Lambda's asynchronous invocation: the first and 2 retries). */
export const BUS_EVENT_ATTEMPTS = 3;

/** What one bus event of a batch came to. */
export type BusBatchOutcome =
  | { ok: true; result: BusIngestResult }
  | { ok: false; attempts: number; error: unknown };

interface Grouped {
  index: number;
  event: BusEvent;
  rows: unknown[];
}

/** The rows of an events envelope that the group write may take, or undefined when it must go alone. */
function groupable(event: BusEvent): { workspaceId: string; rows: unknown[] } | undefined {
  if (event['detail-type'] !== EVENTS_DETAIL_TYPE) return undefined;
  const detail = event.detail as { workspaceId?: unknown; events?: unknown } | null;
  if (typeof detail?.workspaceId !== 'string' || detail.workspaceId === '' || !Array.isArray(detail.events))
    return undefined;
  if (event.source !== undefined && event.source !== workspaceSource(detail.workspaceId)) return undefined;
  return { workspaceId: detail.workspaceId, rows: detail.events };
}

/** Ingests a batch of bus events; the outcomes are in the batch's order. Never throws for a write failure. */
export async function ingestBusBatch(
  writer: BusWriter,
  events: readonly BusEvent[],
  logger: Logger,
  options: BusIngestOptions = {},
): Promise<BusBatchOutcome[]> {
  const outcomes: (BusBatchOutcome | undefined)[] = new Array(events.length);
  const groups = new Map<string, Grouped[]>();
  const alone: number[] = [];
  for (const [index, event] of events.entries()) {
    const rows = groupable(event);
    if (rows === undefined) {
      alone.push(index);
      continue;
    }
    const group = groups.get(rows.workspaceId) ?? [];
    group.push({ index, event, rows: rows.rows });
    groups.set(rows.workspaceId, group);
  }
  for (const [workspaceId, group] of groups) {
    if (group.length === 1) {
      alone.push(group[0]!.index);
      continue;
    }
    try {
      const written = await writeGroup(writer, workspaceId, group, logger, options);
      for (const [i, { index }] of group.entries()) outcomes[index] = { ok: true, result: written[i]! };
    } catch (error) {
      logger.warn('A group write of bus events failed: writing each alone', {
        workspaceId,
        busEvents: group.length,
        error: error instanceof Error ? error.message : String(error),
      });
      // The group was the first attempt of each.
      for (const { index } of group)
        outcomes[index] = await alone1(writer, events[index]!, logger, options, 1);
    }
  }
  for (const index of alone.sort((a, b) => a - b))
    outcomes[index] = await alone1(writer, events[index]!, logger, options, 0);
  return outcomes as BusBatchOutcome[];
}

/** One bus event through {@link ingestBusEvent}, up to {@link BUS_EVENT_ATTEMPTS} attempts in all. */
async function alone1(
  writer: BusWriter,
  event: BusEvent,
  logger: Logger,
  options: BusIngestOptions,
  attemptsBefore: number,
): Promise<BusBatchOutcome> {
  let error: unknown;
  for (let attempt = attemptsBefore + 1; attempt <= BUS_EVENT_ATTEMPTS; attempt++) {
    try {
      return { ok: true, result: await ingestBusEvent(writer, event, logger, options) };
    } catch (caught) {
      error = caught;
    }
  }
  logger.error('A bus event could not be written', {
    eventId: event.id,
    attempts: BUS_EVENT_ATTEMPTS,
    error: error instanceof Error ? error.message : String(error),
  });
  return { ok: false, attempts: BUS_EVENT_ATTEMPTS, error };
}

/**
 * The rows of a group's envelopes written by one call, judged from the earliest envelope's `time`; each
 * envelope's refused rows are kept and its figures published as {@link ingestBusEvent} does (the group's drops
 * and counts on its first envelope, refused rows on their own).
 */
async function writeGroup(
  writer: BusWriter,
  workspaceId: string,
  group: readonly Grouped[],
  logger: Logger,
  options: BusIngestOptions,
): Promise<BusIngestResult[]> {
  const sent = group.map(({ event }) => (event.time === undefined ? Number.NaN : Date.parse(event.time)));
  const sentAtMs = Math.min(...sent.filter(Number.isFinite));
  const rows = group.flatMap(({ rows }) => rows);
  const result = await writer.ingestEvents(workspaceId, rows, Number.isFinite(sentAtMs) ? { sentAtMs } : {});
  logger.info('Ingested events of several bus events together', {
    workspaceId,
    busEvents: group.length,
    received: rows.length,
    accepted: result.accepted,
    invalid: result.invalid.length,
  });
  const results: BusIngestResult[] = [];
  let offset = 0;
  for (const [i, { event, rows: own }] of group.entries()) {
    const invalid = result.invalid
      .filter(({ index }) => index >= offset && index < offset + own.length)
      .map(({ index, reason }) => ({ index: index - offset, reason }));
    offset += own.length;
    const share: IngestResult =
      i === 0
        ? { ...result, invalid }
        : {
            accepted: 0,
            duplicates: 0,
            dropped: { test: 0, history: 0, late: 0 },
            invalid,
            refusedBehindExport: 0,
            recordedAtIgnored: 0,
          };
    results.push(await ingestBusEvent(writtenAlready(share), event, logger, options));
  }
  return results;
}

/**
 * A writer that answers an envelope's `ingestEvents` with its share of the group write, so {@link ingestBusEvent}
 * keeps its refused rows, logs and publishes its figures the one way it does for an envelope alone.
 */
function writtenAlready(share: IngestResult): BusWriter {
  const refuse = (): never => {
    throw new Error('only events are written by a group');
  };
  return {
    ingestEvents: async () => share,
    upsertSubscribers: refuse,
    deleteSubscribers: refuse,
  };
}

/** The record Lambda sends to an on-failure destination (`requestContext.condition` says why). */
export interface AsyncFailureRecord {
  version: '1.0';
  timestamp: string;
  requestContext: {
    requestId: string;
    functionArn: string;
    condition: 'RetriesExhausted';
    approximateInvokeCount: number;
  };
  requestPayload: unknown;
  responseContext: { statusCode: 200; executedVersion: '$LATEST'; functionError: 'Unhandled' };
  responsePayload: { errorType: string; errorMessage: string };
}

/** Lambda's on-failure record of `event`, given up after `attempts` with `error`. */
export function asyncFailureRecord(
  event: unknown,
  error: unknown,
  options: { functionArn: string; requestId: string; attempts: number; now?: () => number },
): AsyncFailureRecord {
  return {
    version: '1.0',
    timestamp: new Date((options.now ?? Date.now)()).toISOString(),
    requestContext: {
      requestId: options.requestId,
      functionArn: options.functionArn,
      condition: 'RetriesExhausted',
      approximateInvokeCount: options.attempts,
    },
    requestPayload: event,
    responseContext: { statusCode: 200, executedVersion: '$LATEST', functionError: 'Unhandled' },
    responsePayload: {
      errorType: error instanceof Error ? error.name : 'Error',
      errorMessage: error instanceof Error ? error.message : String(error),
    },
  };
}

/**
 * The dead letter of a bus event given up after {@link BUS_EVENT_ATTEMPTS} attempts: Lambda's on-failure record
 * (what the ingest dead-letter queue held when EventBridge invoked the function), so `sluice events redrive`
 * reads it as it always has ({@link readDeadLetter}).
 */
export function busEventDeadLetter(
  event: BusEvent,
  error: unknown,
  options: { functionArn: string; requestId: string; now?: () => number },
): string {
  return JSON.stringify(asyncFailureRecord(event, error, { ...options, attempts: BUS_EVENT_ATTEMPTS }));
}
