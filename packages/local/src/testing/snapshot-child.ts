/**
 * A test fixture: `node --import tsx snapshot-child.ts <snapshotFile> <count>` starts DynamoDB Local kept in
 * `snapshotFile`, ingests `count` generated events through EventLogWriter, prints `INGESTED`, and waits to be
 * killed (the test kills it with SIGKILL, as a crash of `npm start` would).
 */
import { EventLogWriter, generateEvents } from '@sluice/eventlog';
import { startDynamoDbLocal } from '../dynamodb-local.js';
import { LOCAL_TABLE_NAMES, localDynamoDbClient } from '../local-tables.js';

const [snapshotFile, count] = process.argv.slice(2);
if (!snapshotFile || !count) throw new Error('usage: snapshot-child.ts <snapshotFile> <count>');
const server = await startDynamoDbLocal({ snapshotFile, quickStart: true });
const client = localDynamoDbClient(server.endpoint);
await new EventLogWriter({
  client,
  eventsTable: LOCAL_TABLE_NAMES.events,
  subscribersTable: LOCAL_TABLE_NAMES.subscribers,
  explicitRecordedAt: 'unchecked',
}).ingestEvents('ws_child', [
  ...generateEvents({
    count: Number(count),
    seed: 7,
    workspaceId: 'ws_child',
    from: Date.now() - 3_600_000,
    to: Date.now(),
  }),
]);
console.log(`INGESTED ${server.pid}`);
setInterval(() => {}, 1_000);
