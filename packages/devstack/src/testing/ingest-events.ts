import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { EventLogWriter, generateEvents } from '@sluice/eventlog';
import { LOCAL_TABLE_NAMES } from '../local-tables.js';

/** Test helper: writes `count` generated events (of the last hour) into the local tables through EventLogWriter. */
export function ingestGeneratedEvents(client: DynamoDBClient, seed: number, count: number) {
  return new EventLogWriter({
    client,
    eventsTable: LOCAL_TABLE_NAMES.events,
    subscribersTable: LOCAL_TABLE_NAMES.subscribers,
    explicitRecordedAt: 'unchecked',
  }).ingestEvents('ws_persist', [
    ...generateEvents({
      count,
      seed,
      workspaceId: 'ws_persist',
      from: Date.now() - 3_600_000,
      to: Date.now(),
    }),
  ]);
}
