import { Logger } from '@aws-lambda-powertools/logger';
import { expect } from 'vitest';
import { eventTables } from '../../../test/helpers/tables.js';
import { batchWrite } from './batch.js';
import { defaultEventLogClient } from './client.js';
import { EventLogWriter } from './ingest.js';
import { EVENT_SHARDS, eventPk, eventSk, hourStart, shardOf } from './keys.js';

const silent = new Logger({ serviceName: 'test', logLevel: 'SILENT' });

/** Ingests custom events at explicit recorded times in one call, the writer's clock at `nowMs` (segments). */
export async function ingestCustomEvents(
  workspaceId: string,
  rows: readonly { id: string; recordedMs: number }[],
  nowMs: number,
): Promise<void> {
  const writer = new EventLogWriter({
    ...eventTables,
    now: () => nowMs,
    logger: silent,
    explicitRecordedAt: 'unchecked',
  });
  const result = await writer.ingestEvents(
    workspaceId,
    rows.map(({ id, recordedMs }) => ({
      dataset: 'custom_events',
      id,
      event_name: 'e',
      occurred_at: recordedMs - 1,
      recorded_at: recordedMs,
    })),
  );
  expect(result.invalid).toEqual([]);
}

/**
 * Writes custom events as the event log stored them before segments: one item a row, in its shard's partition,
 * the line `{"id", "recorded_at", …}`, expiring 35 days after it was recorded.
 */
export async function writePerRowItems(
  workspaceId: string,
  rows: readonly { id: string; recordedMs: number; padding?: string; line?: string }[],
): Promise<void> {
  await batchWrite(
    defaultEventLogClient(),
    eventTables.eventsTable,
    rows.map(({ id, recordedMs, padding, line }) => ({
      PutRequest: {
        Item: {
          PK: { S: eventPk(workspaceId, 'custom_events', hourStart(recordedMs), shardOf(id, EVENT_SHARDS)) },
          SK: { S: eventSk(recordedMs, id) },
          line: {
            S:
              line ??
              JSON.stringify({
                id,
                recorded_at: new Date(recordedMs).toISOString(),
                ...(padding ? { padding } : {}),
              }),
          },
          expiresAt: { N: String(Math.floor(recordedMs / 1000) + 35 * 86_400) },
        },
      },
    })),
  );
}
