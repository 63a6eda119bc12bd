/**
 * Redrive: bus events that ingestion could not write, back from the dead-letter queue into the event log.
 *
 * The ingest dead-letter queue receives two kinds of message, both holding the original bus event:
 * - a Lambda on-failure record (the function threw on all three attempts of an asynchronous invocation, or the
 *   event expired in Lambda's queue): `{ "requestContext": { "condition", ... }, "requestPayload": <bus event>,
 *   "responsePayload": { "errorType", "errorMessage" } }`;
 * - the bus event itself, from the rule target's dead-letter queue (EventBridge could not invoke the function).
 *
 * {@link redriveDeadLetters} writes each one through {@link ingestBusEvent}, the ingest function's own path
 * (same rules, same source check; lateness judged from the event's original `time`), and deletes a message
 * only once it is written. A message that does not hold a bus event, or whose write fails again, stays in the
 * queue and is reported.
 *
 * Erased data is never written back: before a message is written, the workspace's erasures (the erasure log
 * `sluice erase` keeps, `@sluice/control` `ErasureLogStore`) that ran after it was sent take out the rows of the
 * erased people (`eventRowBelongsTo`, `subscriberRowBelongsTo` of `@sluice/core`), or the whole message after
 * an erasure of the workspace; they are counted in `erased` and the message is deleted like a written one.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import {
  type ErasedPerson,
  type ErasureEntry,
  type ErasureLog,
  eventRowBelongsTo,
  personOfEntry,
  subscriberRowBelongsTo,
} from '@sluice/core';
import { type BusEvent, type BusIngestResult, type BusWriter, ingestBusEvent } from './bus.js';
import type { RejectedEventSink } from './rejected.js';

/** One message of the dead-letter queue. */
export interface DeadLetter {
  /** The queue's message id. */
  id: string;
  body: string;
  /** What deletes this receipt of the message. */
  receiptHandle: string;
}

/** The dead-letter queue, as redrive uses it: SQS in AWS (`SqsDeadLetterQueue`), a stand-in in tests. */
export interface DeadLetterQueue {
  /**
   * Up to `max` messages, hidden from other receivers while redrive works on them; an empty list when the
   * queue has none visible.
   */
  receive(max: number): Promise<DeadLetter[]>;
  /** Removes a message that has been written. */
  delete(letter: DeadLetter): Promise<void>;
}

/** Why Lambda gave up on an invocation (`requestContext.condition` of an on-failure record). */
export type FailureCondition = 'RetriesExhausted' | 'EventAgeExceeded' | string;

/** A dead letter, read. */
export type ReadDeadLetter =
  | { kind: 'lambda-failure'; event: BusEvent; condition?: FailureCondition; errorType?: string }
  | { kind: 'undelivered'; event: BusEvent }
  | { kind: 'unreadable'; reason: string };

/** What one message of the queue was. */
export function readDeadLetter(body: string): ReadDeadLetter {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return { kind: 'unreadable', reason: 'not JSON' };
  }
  if (!isRecord(parsed)) return { kind: 'unreadable', reason: 'not a JSON object' };
  if ('requestPayload' in parsed) {
    const event = parsed.requestPayload;
    if (!isBusEvent(event)) return { kind: 'unreadable', reason: 'requestPayload is not a bus event' };
    const context = isRecord(parsed.requestContext) ? parsed.requestContext : {};
    const response = isRecord(parsed.responsePayload) ? parsed.responsePayload : {};
    return {
      kind: 'lambda-failure',
      event,
      ...(typeof context.condition === 'string' ? { condition: context.condition } : {}),
      ...(typeof response.errorType === 'string' ? { errorType: response.errorType } : {}),
    };
  }
  if (isBusEvent(parsed)) return { kind: 'undelivered', event: parsed };
  return { kind: 'unreadable', reason: 'neither a Lambda failure record nor a bus event' };
}

/** What {@link redriveDeadLetters} did (the `events redrive --json` output). */
export interface RedriveSummary {
  /** Messages received. */
  messages: number;
  /** Messages written to the log (or refused by the ingest rules) and deleted from the queue. */
  redriven: number;
  /** Events written, and dropped or refused by the ingest rules, over the redriven messages. */
  events: { accepted: number; dropped: { test: number; history: number; late: number }; invalid: number };
  /** Subscriber upserts and deletes written. */
  subscribers: { upserted: number; deleted: number; invalid: number };
  /** Messages whose detail the ingest contract refuses (deleted: sending them again cannot help). */
  refused: { messageId: string; reason: string }[];
  /** Messages left in the queue: not a bus event, or the write failed again. */
  left: { messageId: string; reason: string }[];
  /** Left out because an erasure that ran after they were sent removed them: events, subscriber upserts. */
  erased: ErasedCounts;
}

/** Options of {@link redriveDeadLetters}. */
export interface RedriveOptions {
  /** The erasure log (`@sluice/control` `ErasureLogStore`): required, so no redrive writes erased data back. */
  erasures: ErasureLog;
  /** Stop after this many messages. @default no limit: until the queue shows none */
  maxMessages?: number;
  /** Messages received at once (SQS allows 10). @default 10 */
  batchSize?: number;
  /** Where refused envelopes and rows are kept with their reasons. @default - only reported */
  rejected?: RejectedEventSink;
}

/**
 * Redrives the queue: receives messages until none is visible (or `maxMessages`), writes each through
 * {@link ingestBusEvent} and deletes it once written. Messages that fail stay hidden for the queue's visibility
 * timeout, so one pass reads each message at most once; they are listed in `left`.
 */
export async function redriveDeadLetters(
  queue: DeadLetterQueue,
  writer: BusWriter,
  logger: Logger,
  options: RedriveOptions,
): Promise<RedriveSummary> {
  const summary: RedriveSummary = {
    messages: 0,
    redriven: 0,
    events: { accepted: 0, dropped: { test: 0, history: 0, late: 0 }, invalid: 0 },
    subscribers: { upserted: 0, deleted: 0, invalid: 0 },
    refused: [],
    left: [],
    erased: { events: 0, subscribers: 0 },
  };
  const erasuresByWorkspace = new Map<string, Promise<readonly ErasureEntry[]>>();
  const max = options.maxMessages ?? Number.POSITIVE_INFINITY;
  const batchSize = options.batchSize ?? 10;
  while (summary.messages < max) {
    const letters = await queue.receive(Math.min(batchSize, max - summary.messages));
    if (letters.length === 0) break;
    for (const letter of letters) {
      summary.messages++;
      const read = readDeadLetter(letter.body);
      if (read.kind === 'unreadable') {
        summary.left.push({ messageId: letter.id, reason: read.reason });
        continue;
      }
      let result: BusIngestResult;
      try {
        const event = await withoutErased(read.event, options.erasures, erasuresByWorkspace, summary.erased);
        if (event === undefined) {
          await queue.delete(letter);
          summary.redriven++;
          continue;
        }
        result = await ingestBusEvent(writer, event, logger, { rejected: options.rejected });
      } catch (error) {
        summary.left.push({ messageId: letter.id, reason: `write failed again: ${errorName(error)}` });
        continue;
      }
      addResult(summary, letter.id, result);
      await queue.delete(letter);
      summary.redriven++;
    }
  }
  return summary;
}

/** Rows left out as erased: events, subscriber upserts. */
export interface ErasedCounts {
  events: number;
  subscribers: number;
}

/**
 * The bus event without what the workspace's erasures that ran after it was sent removed: undefined when
 * nothing is left to write (an erasure of the workspace, or every row erased). Counts what it leaves out in
 * `erased`. The one filter of erased data for every redrive (`events redrive`, `events rejected redrive`) and
 * for the rejected events an erasure rewrites. `cache` holds the log's entries per workspace for one pass;
 * `workspaceId` defaults to the detail's (a stored rejection gives the workspace it is kept under).
 */
export async function withoutErased(
  event: BusEvent,
  log: ErasureLog,
  cache: Map<string, Promise<readonly ErasureEntry[]>>,
  erased: ErasedCounts,
  workspaceId: unknown = isRecord(event.detail) ? event.detail.workspaceId : undefined,
): Promise<BusEvent | undefined> {
  if (typeof workspaceId !== 'string' || workspaceId === '') return event;
  let entries = cache.get(workspaceId);
  if (entries === undefined) {
    entries = log.erasuresOf(workspaceId);
    cache.set(workspaceId, entries);
  }
  // An event without a time is taken as sent before every erasure.
  const sentAtMs = event.time === undefined ? Number.NaN : Date.parse(event.time);
  const after = (await entries).filter((entry) => !(entry.erasedAtMs < sentAtMs));
  if (after.length === 0) return event;
  const detail = isRecord(event.detail) ? event.detail : {};
  const events = Array.isArray(detail.events) ? detail.events : [];
  const upsert = Array.isArray(detail.upsert) ? detail.upsert : [];
  if (after.some((entry) => entry.kind === 'all')) {
    erased.events += events.length;
    erased.subscribers += upsert.length;
    return undefined;
  }
  const people: ErasedPerson[] = after.map((entry) => personOfEntry(workspaceId, entry));
  const keep = (belongs: (row: Record<string, unknown>, person: ErasedPerson) => boolean) => (row: unknown) =>
    !isRecord(row) || !people.some((person) => belongs(row, person));
  const keptEvents = events.filter(keep(eventRowBelongsTo));
  const keptUpsert = upsert.filter(keep(subscriberRowBelongsTo));
  erased.events += events.length - keptEvents.length;
  erased.subscribers += upsert.length - keptUpsert.length;
  if (keptEvents.length === events.length && keptUpsert.length === upsert.length) return event;
  const hasDeletes = Array.isArray(detail.delete) && detail.delete.length > 0;
  if (keptEvents.length === 0 && keptUpsert.length === 0 && !hasDeletes) return undefined;
  return {
    ...event,
    detail: {
      ...detail,
      ...(Array.isArray(detail.events) ? { events: keptEvents } : {}),
      ...(Array.isArray(detail.upsert) ? { upsert: keptUpsert } : {}),
    },
  };
}

function addResult(summary: RedriveSummary, messageId: string, result: BusIngestResult): void {
  switch (result.kind) {
    case 'events':
      summary.events.accepted += result.accepted;
      summary.events.dropped.test += result.dropped.test;
      summary.events.dropped.history += result.dropped.history;
      summary.events.dropped.late += result.dropped.late;
      summary.events.invalid += result.invalid.length;
      return;
    case 'subscribers':
      summary.subscribers.upserted += result.upserted.accepted;
      summary.subscribers.deleted += result.deleted.accepted;
      summary.subscribers.invalid += result.upserted.invalid.length + result.deleted.invalid.length;
      return;
    case 'refused':
      summary.refused.push({ messageId, reason: result.reason });
      return;
    case 'ignored':
      summary.refused.push({ messageId, reason: `not a Sluice detail-type: ${result.detailType}` });
      return;
  }
}

function errorName(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isBusEvent(value: unknown): value is BusEvent {
  return isRecord(value) && typeof value['detail-type'] === 'string' && 'detail' in value;
}
