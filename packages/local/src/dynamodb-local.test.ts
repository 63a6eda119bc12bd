import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { type DynamoDBClient, ListTablesCommand, ScanCommand } from '@aws-sdk/client-dynamodb';
import { EventLogWriter, generateEvents } from '@sluice/eventlog';
import { describe, expect, it } from 'vitest';
import { type DynamoDbLocal, startDynamoDbLocal } from './dynamodb-local.js';
import { createLocalTables, LOCAL_TABLE_NAMES, LOCAL_TABLES, localDynamoDbClient } from './local-tables.js';

/** Resolves 'open' or the connection error code. */
function probe(host: string, port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect({ host, port, timeout: 2_000 });
    socket.once('connect', () => {
      socket.destroy();
      resolve('open');
    });
    socket.once('timeout', () => {
      socket.destroy();
      resolve('timeout');
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'));
  });
}

function isRunning(pid: number | undefined): boolean {
  if (pid === undefined) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('DynamoDB Local', () => {
  it('keeps tables in its dbPath across restarts, listens on loopback only, and stops its process', async () => {
    // Prepare
    const dbPath = await mkdtemp(join(tmpdir(), 'sluice-ddb-test-'));
    const external = Object.values(networkInterfaces())
      .flat()
      .find((address) => address && address.family === 'IPv4' && !address.internal)?.address;
    try {
      const first = await startDynamoDbLocal({ dbPath, quickStart: true });
      const firstClient = localDynamoDbClient(first.endpoint);
      await createLocalTables(firstClient);
      await createLocalTables(firstClient); // idempotent
      const externalProbe = external ? await probe(external, first.port) : 'ECONNREFUSED';
      firstClient.destroy();
      const firstPid = first.pid;
      await first.stop();
      // Act
      const second = await startDynamoDbLocal({ dbPath, quickStart: true });
      const secondClient = localDynamoDbClient(second.endpoint);
      const { TableNames } = await secondClient.send(new ListTablesCommand({}));
      secondClient.destroy();
      await second.stop();
      // Assess
      expect(first.endpoint).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(externalProbe).toBe('ECONNREFUSED');
      expect(TableNames?.sort()).toEqual(Object.values(LOCAL_TABLE_NAMES).sort());
      expect(LOCAL_TABLES).toHaveLength(3);
      expect(isRunning(firstPid)).toBe(false);
      expect(isRunning(second.pid)).toBe(false);
      expect(await probe('127.0.0.1', second.port)).toBe('ECONNREFUSED');
    } finally {
      await rm(dbPath, { recursive: true, force: true });
    }
  });
});

/** Events in the local events table (a Scan counting every page). */
async function countEvents(client: DynamoDBClient): Promise<number> {
  let count = 0;
  let ExclusiveStartKey: Record<string, never> | undefined;
  do {
    const page = await client.send(
      new ScanCommand({ TableName: LOCAL_TABLE_NAMES.events, Select: 'COUNT', ExclusiveStartKey }),
    );
    count += page.Count ?? 0;
    ExclusiveStartKey = page.LastEvaluatedKey as typeof ExclusiveStartKey;
  } while (ExclusiveStartKey);
  return count;
}

/** Starts the no-sync server on `dbPath`, runs `use` with a client, and returns the server (still running). */
async function withNoSyncServer(
  dbPath: string,
  use: (client: DynamoDBClient) => Promise<void>,
): Promise<DynamoDbLocal> {
  const server = await startDynamoDbLocal({ dbPath, syncWrites: false, quickStart: true });
  const client = localDynamoDbClient(server.endpoint);
  try {
    await use(client);
  } finally {
    client.destroy();
  }
  return server;
}

describe('DynamoDB Local without a sync per write', () => {
  it('keeps what EventLogWriter wrote through a stop and through a SIGKILL of the server', async () => {
    // Prepare
    const dbPath = await mkdtemp(join(tmpdir(), 'sluice-ddb-nosync-'));
    const events = (seed: number) => [
      ...generateEvents({
        count: 600,
        seed,
        workspaceId: 'ws_persist',
        from: Date.now() - 3_600_000,
        to: Date.now(),
      }),
    ];
    const ingest = (client: DynamoDBClient, seed: number) =>
      new EventLogWriter({
        client,
        eventsTable: LOCAL_TABLE_NAMES.events,
        subscribersTable: LOCAL_TABLE_NAMES.subscribers,
        explicitRecordedAt: 'unchecked',
      }).ingestEvents('ws_persist', events(seed));
    const written: number[] = [];
    try {
      // Act: write, stop; restart, write, SIGKILL; restart and count.
      const first = await withNoSyncServer(dbPath, async (client) => {
        await createLocalTables(client);
        written.push((await ingest(client, 1)).accepted);
      });
      await first.stop();
      const second = await withNoSyncServer(dbPath, async (client) => {
        written.push((await ingest(client, 2)).accepted);
      });
      process.kill(second.pid as number, 'SIGKILL');
      await second.stop();
      let counted = 0;
      const third = await withNoSyncServer(dbPath, async (client) => {
        counted = await countEvents(client);
      });
      await third.stop();
      // Assess
      expect(written).toEqual([600, 600]);
      expect(counted).toBe(1200);
      // The journal file stays between transactions: the no-sync settings were applied.
      expect(existsSync(join(dbPath, 'shared-local-instance.db-journal'))).toBe(true);
    } finally {
      await rm(dbPath, { recursive: true, force: true });
    }
  });
});
