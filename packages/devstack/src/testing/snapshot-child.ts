/**
 * A test fixture: `node --import tsx snapshot-child.ts <snapshotFile> <count>` starts DynamoDB Local kept in
 * `snapshotFile`, ingests `count` generated events through EventLogWriter, prints `INGESTED`, and waits to be
 * killed (the test kills it with SIGKILL, as a crash of `npm start` would).
 */
import { startDynamoDbLocal } from '../dynamodb-local.js';
import { localDynamoDbClient } from '../local-tables.js';
import { ingestGeneratedEvents } from './ingest-events.js';

const [snapshotFile, count] = process.argv.slice(2);
if (!snapshotFile || !count) throw new Error('usage: snapshot-child.ts <snapshotFile> <count>');
const server = await startDynamoDbLocal({ snapshotFile, quickStart: true });
await ingestGeneratedEvents(localDynamoDbClient(server.endpoint), 7, Number(count));
console.log(`INGESTED ${server.pid}`);
setInterval(() => {}, 1_000);
