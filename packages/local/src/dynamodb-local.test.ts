import { mkdtemp, rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { startDynamoDbLocal } from './dynamodb-local.js';
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
