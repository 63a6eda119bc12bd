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
import type { EventLogWriter, IngestResult, SubscriberWriteResult } from './ingest.js';

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

/**
 * Ingests one bus event: validates the envelope, then writes through the writer (the same rules and batched
 * path as the library). A refused envelope or invalid rows are logged (error and warning) with their reasons,
 * and counted in the result; write failures (throttling past the retries) are thrown, so Lambda retries.
 */
export async function ingestBusEvent(
  writer: BusWriter,
  event: BusEvent,
  logger: Logger,
): Promise<BusIngestResult> {
  const detailType = event['detail-type'];
  const context = { eventId: event.id, source: event.source, detailType };
  if (detailType === EVENTS_DETAIL_TYPE) {
    const parsed = eventsDetail.safeParse(event.detail);
    if (!parsed.success) return refuse(logger, context, describeIssues(parsed.error.issues));
    const { workspaceId, events } = parsed.data;
    const mismatch = sourceMismatch(event.source, workspaceId);
    if (mismatch) return refuse(logger, context, mismatch);
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
    logger.info('Ingested events', {
      ...context,
      workspaceId,
      received: events.length,
      accepted: result.accepted,
      duplicates: result.duplicates,
      dropped: result.dropped,
      invalid: result.invalid.length,
      recordedAtIgnored: result.recordedAtIgnored,
    });
    return { kind: 'events', workspaceId, ...result };
  }
  if (detailType === SUBSCRIBERS_DETAIL_TYPE) {
    const parsed = subscribersDetail.safeParse(event.detail);
    if (!parsed.success) return refuse(logger, context, describeIssues(parsed.error.issues));
    const { workspaceId } = parsed.data;
    const mismatch = sourceMismatch(event.source, workspaceId);
    if (mismatch) return refuse(logger, context, mismatch);
    const upserted = await writer.upsertSubscribers(workspaceId, parsed.data.upsert ?? []);
    const deleted = await writer.deleteSubscribers(workspaceId, parsed.data.delete ?? []);
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
  return { kind: 'ignored', detailType };
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

function refuse(logger: Logger, context: object, reason: string): BusIngestResult {
  logger.error('Refused a bus event: its detail does not match the contract', { ...context, reason });
  return { kind: 'refused', reason };
}
