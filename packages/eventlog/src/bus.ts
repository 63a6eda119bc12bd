/**
 * The EventBridge contract of ingestion: what producers put on the Sluice bus, and how one bus event maps
 * onto {@link EventLogWriter}. The ingest Lambda is a thin wrapper around {@link ingestBusEvent}.
 *
 * - source `sluice.workspace.<workspaceId>` ({@link workspaceSource}): the workspace the events belong to. The
 *   ingest rule takes only sources with this prefix, and IAM can limit a producer to some workspaces with the
 *   `events:source` condition key; the detail's `workspaceId` must name the same workspace;
 * - detail-type `sluice.events`, detail `{ "workspaceId": "...", "events": [ { "dataset": "email_events", ...row } ] }`
 * - detail-type `sluice.subscribers`, detail `{ "workspaceId": "...", "upsert": [ ...rows ], "delete": [ "id", ... ] }`
 *
 * One PutEvents entry holds at most {@link MAX_BUS_ENTRY_BYTES} (256 KB, source and detail-type included), so a
 * producer sends a few hundred events per entry, and PutEvents takes 10 entries a call. Other detail-types are
 * ignored (logged), so the bus can carry other traffic.
 * Recorded time is the ingest's own clock, always: an event's `recorded_at` is ignored (counted in
 * `recordedAtIgnored` and logged), since a producer's time could fall at or behind a position an export has
 * already passed, and the row would be accepted and never exported. The ingest Lambda's writer is built with
 * `explicitRecordedAt: 'ignore'`. (Imports with their own recorded times go through the CLI, which checks them.)
 *
 * One bus event holds at most 256 KB, so a producer sends a few hundred events per entry (PutEvents takes 10
 * entries a call). Other detail-types are ignored (logged), so the bus can carry other traffic.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import { describeIssues } from '@sluice/core';
import { z } from 'zod';
import type { EventLogWriter, IngestResult, InvalidInput, SubscriberWriteResult } from './ingest.js';
import type { IngestMetrics } from './metrics.js';
import type { Rejection, RejectedEventSink } from './rejected.js';

/** The detail-type of a batch of events. */
export const EVENTS_DETAIL_TYPE = 'sluice.events';
/** The detail-type of subscriber upserts and deletes. */
export const SUBSCRIBERS_DETAIL_TYPE = 'sluice.subscribers';

/** The prefix of every producer's `source`; the rest is the workspace id. */
export const WORKSPACE_SOURCE_PREFIX = 'sluice.workspace.';

/** The largest PutEvents entry EventBridge accepts, in bytes (its documented size calculation). */
export const MAX_BUS_ENTRY_BYTES = 256 * 1024;

/** The `source` a producer puts events of `workspaceId` under. */
export function workspaceSource(workspaceId: string): string {
  return `${WORKSPACE_SOURCE_PREFIX}${workspaceId}`;
}

/** The part of an EventBridge event ingestion reads (no Lambda types in the domain). */
export interface BusEvent {
  'detail-type': string;
  detail: unknown;
  id?: string;
  source?: string;
  /** When the producer sent it (ISO 8601; EventBridge sets it, a producer may give an earlier one). */
  time?: string;
}

const eventsDetail = z.object({ workspaceId: z.string().min(1), events: z.array(z.unknown()) });
const subscribersDetail = z.object({
  workspaceId: z.string().min(1),
  upsert: z.array(z.unknown()).optional(),
  delete: z.array(z.unknown()).optional(),
});

/** The writes ingestion makes: an {@link EventLogWriter}, or anything with its three methods. */
export type BusWriter = Pick<EventLogWriter, 'ingestEvents' | 'upsertSubscribers' | 'deleteSubscribers'>;

/** What one bus event did. */
export type BusIngestResult =
  | ({ kind: 'events'; workspaceId: string } & IngestResult)
  | {
      kind: 'subscribers';
      workspaceId: string;
      upserted: SubscriberWriteResult;
      deleted: SubscriberWriteResult;
    }
  /** The detail did not match its detail-type's shape: nothing was written (retrying would not help). */
  | { kind: 'refused'; reason: string }
  /** Not a Sluice detail-type. */
  | { kind: 'ignored'; detailType: string };

/** Options of {@link ingestBusEvent}. */
export interface BusIngestOptions {
  /**
   * Where refused envelopes and refused rows are kept, with their reasons (the ingest function, the
   * redrives). @default - only logged
   */
  rejected?: RejectedEventSink;
  /** The per bus event metrics (the ingest function: lag, rejections, drops). @default - none */
  metrics?: IngestMetrics;
  /** The clock of the lag, epoch ms. @default Date.now */
  now?: () => number;
}

/**
 * Ingests one bus event: validates the envelope, then writes through the writer (the same rules and batched
 * path as the library). A refused envelope or invalid rows are logged (error and warning) with their reasons,
 * kept in `options.rejected` and counted in the result and `options.metrics`; write failures (throttling past
 * the retries) are thrown, so Lambda retries (a rejection stored before is stored again under the same id).
 */
export async function ingestBusEvent(
  writer: BusWriter,
  event: BusEvent,
  logger: Logger,
  options: BusIngestOptions = {},
): Promise<BusIngestResult> {
  const result = await ingestOne(writer, event, logger, options.rejected);
  if (options.metrics?.busEvent) {
    const sentAtMs = event.time === undefined ? Number.NaN : Date.parse(event.time);
    const nowMs = (options.now ?? Date.now)();
    options.metrics.busEvent({
      workspaceId: workspaceOf(event),
      ...(Number.isFinite(sentAtMs) ? { lagMs: nowMs - sentAtMs } : {}),
      rejectedRows:
        result.kind === 'events'
          ? result.invalid.length
          : result.kind === 'subscribers'
            ? result.upserted.invalid.length + result.deleted.invalid.length
            : 0,
      rejectedEnvelopes: result.kind === 'refused' || result.kind === 'ignored' ? 1 : 0,
      dropped: result.kind === 'events' ? result.dropped : { test: 0, history: 0, late: 0 },
    });
  }
  return result;
}

async function ingestOne(
  writer: BusWriter,
  event: BusEvent,
  logger: Logger,
  rejected: RejectedEventSink | undefined,
): Promise<BusIngestResult> {
  const detailType = event['detail-type'];
  const context = { eventId: event.id, source: event.source, detailType };
  const refuse = async (reason: string): Promise<BusIngestResult> => {
    logger.error('Refused a bus event: its detail does not match the contract', { ...context, reason });
    await rejected?.put({ workspaceId: workspaceOf(event), kind: 'envelope', event, reasons: [reason] });
    return { kind: 'refused', reason };
  };
  if (detailType === EVENTS_DETAIL_TYPE) {
    const parsed = eventsDetail.safeParse(event.detail);
    if (!parsed.success) return refuse(describeIssues(parsed.error.issues));
    const { workspaceId, events } = parsed.data;
    const mismatch = sourceMismatch(event.source, workspaceId);
    if (mismatch) return refuse(mismatch);
    const sentAtMs = event.time === undefined ? Number.NaN : Date.parse(event.time);
    const result = await writer.ingestEvents(
      workspaceId,
      events,
      Number.isFinite(sentAtMs) ? { sentAtMs } : {},
    );
    if (result.dropped.late > 0) {
      logger.warn('Dropped events that arrived more than 7 days after they occurred', {
        ...context,
        workspaceId,
        late: result.dropped.late,
      });
    }
    await keepRows(rejected, event, workspaceId, { events: [events, result.invalid] });
    logger.info('Ingested events', {
      ...context,
      workspaceId,
      received: events.length,
      accepted: result.accepted,
      duplicates: result.duplicates,
      dropped: result.dropped,
      invalid: result.invalid.length,
      recordedAtIgnored: result.recordedAtIgnored,
      // Messages and projects: what was ignored (an older receipt) or not exported (a draft), counted.
      ...(result.currentRows ? { currentRows: result.currentRows } : {}),
    });
    return { kind: 'events', workspaceId, ...result };
  }
  if (detailType === SUBSCRIBERS_DETAIL_TYPE) {
    const parsed = subscribersDetail.safeParse(event.detail);
    if (!parsed.success) return refuse(describeIssues(parsed.error.issues));
    const { workspaceId } = parsed.data;
    const mismatch = sourceMismatch(event.source, workspaceId);
    if (mismatch) return refuse(mismatch);
    const upserts = parsed.data.upsert ?? [];
    const deletes = parsed.data.delete ?? [];
    const upserted = await writer.upsertSubscribers(workspaceId, upserts);
    const deleted = await writer.deleteSubscribers(workspaceId, deletes);
    await keepRows(rejected, event, workspaceId, {
      upsert: [upserts, upserted.invalid],
      delete: [deletes, deleted.invalid],
    });
    logger.info('Ingested subscribers', {
      ...context,
      workspaceId,
      upserted: upserted.accepted,
      deleted: deleted.accepted,
      invalid: upserted.invalid.length + deleted.invalid.length,
    });
    return { kind: 'subscribers', workspaceId, upserted, deleted };
  }
  logger.info('Ignored a bus event of another detail-type', context);
  // Only a redrive of the dead-letter queue gets here (the catch-all rules send such entries there): kept.
  await rejected?.put({
    workspaceId: workspaceOf(event),
    kind: 'envelope',
    event,
    reasons: [
      `detail-type: must be ${EVENTS_DETAIL_TYPE} or ${SUBSCRIBERS_DETAIL_TYPE}, got "${detailType}"`,
    ],
  });
  return { kind: 'ignored', detailType };
}

/**
 * Keeps the refused rows of an accepted envelope: the bus event again, its detail holding only those rows (per
 * field: `events`, or `upsert` and `delete`), with `<field>[<i>]: <reason>` for each. Nothing when none.
 */
async function keepRows(
  rejected: RejectedEventSink | undefined,
  event: BusEvent,
  workspaceId: string,
  fields: Record<string, [readonly unknown[], readonly InvalidInput[]]>,
): Promise<void> {
  if (rejected === undefined) return;
  const detail: Record<string, unknown> = { workspaceId };
  const reasons: string[] = [];
  for (const [field, [inputs, invalid]] of Object.entries(fields)) {
    if (invalid.length === 0) continue;
    detail[field] = invalid.map(({ index }) => inputs[index]);
    for (const [i, { reason }] of invalid.entries()) reasons.push(`${field}[${i}]: ${reason}`);
  }
  if (reasons.length === 0) return;
  const rows: Rejection = { workspaceId, kind: 'rows', event: { ...event, detail }, reasons };
  await rejected.put(rows);
}

/** The workspace a bus event is about: its detail's `workspaceId`, else its workspace source's, else `-`. */
export function workspaceOf(event: BusEvent): string {
  const named = (event.detail as { workspaceId?: unknown } | null | undefined)?.workspaceId;
  if (typeof named === 'string' && named !== '') return named;
  if (event.source?.startsWith(WORKSPACE_SOURCE_PREFIX)) {
    const fromSource = event.source.slice(WORKSPACE_SOURCE_PREFIX.length);
    if (fromSource !== '') return fromSource;
  }
  return '-';
}

/**
 * Why a bus event may not write for `workspaceId`, or undefined when it may: its source must be
 * `sluice.workspace.<workspaceId>`, so an IAM condition on `events:source` decides who writes for whom.
 * An event without a source (a direct call, the CLI) is not checked.
 */
function sourceMismatch(source: string | undefined, workspaceId: string): string | undefined {
  if (source === undefined || source === workspaceSource(workspaceId)) return undefined;
  return `source: must be "${workspaceSource(workspaceId)}" for workspace "${workspaceId}", got "${source}"`;
}
