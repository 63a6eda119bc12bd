import { eventTables } from '../../../test/helpers/tables.js';
import { batchWrite } from './batch.js';
import { defaultEventLogClient } from './client.js';
import { EVENT_SHARDS, eventPk, eventSk, hourStart, shardOf } from './keys.js';

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
