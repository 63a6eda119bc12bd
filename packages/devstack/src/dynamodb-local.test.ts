import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type DynamoDBClient, ListTablesCommand, ScanCommand } from '@aws-sdk/client-dynamodb';
import { ingestGeneratedEvents } from './testing/ingest-events.js';
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
  it('keeps tables in its snapshot file across restarts, listens on loopback only, and stops its process', async () => {
    // Prepare
    const dir = await mkdtemp(join(tmpdir(), 'sluice-ddb-test-'));
    const snapshotFile = join(dir, 'shared-local-instance.db');
    const external = Object.values(networkInterfaces())
      .flat()
      .find((address) => address && address.family === 'IPv4' && !address.internal)?.address;
    try {
      const first = await startDynamoDbLocal({ snapshotFile, quickStart: true });
      const firstClient = localDynamoDbClient(first.endpoint);
      await createLocalTables(firstClient);
      await createLocalTables(firstClient); // idempotent
      const externalProbe = external ? await probe(external, first.port) : 'ECONNREFUSED';
      firstClient.destroy();
      const firstPid = first.pid;
      await first.stop();
      // Act
      const second = await startDynamoDbLocal({ snapshotFile, quickStart: true });
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
      await rm(dir, { recursive: true, force: true });
    }
  });
});

/** Events in the local events table (a Scan counting every page). */
async function countEvents(client: DynamoDBClient): Promise<number> {
  // The log stores compressed segments (a `count` of rows each, partition ending `#seg`) beside per-row items,
  // and a workspace's per-row marker (partition ending `#eventlog`), which is no row.
  let count = 0;
  let ExclusiveStartKey: Record<string, never> | undefined;
  do {
    const page = await client.send(
      new ScanCommand({
        TableName: LOCAL_TABLE_NAMES.events,
        ProjectionExpression: 'PK, #count',
        ExpressionAttributeNames: { '#count': 'count' },
        ExclusiveStartKey,
      }),
    );
    for (const item of page.Items ?? []) {
      if (item.PK?.S?.endsWith('#eventlog')) continue;
      count += item.PK?.S?.endsWith('#seg') ? Number(item.count?.N) : 1;
    }
    ExclusiveStartKey = page.LastEvaluatedKey as typeof ExclusiveStartKey;
  } while (ExclusiveStartKey);
  return count;
}

/** Starts a server kept in `snapshotFile`, runs `use` with a client, and returns the server (still running). */
async function withSnapshotServer(
  snapshotFile: string,
  use: (client: DynamoDBClient) => Promise<void>,
  options: { snapshotIntervalMs?: number; log?: (line: string) => void } = {},
): Promise<DynamoDbLocal> {
  const server = await startDynamoDbLocal({ snapshotFile, quickStart: true, ...options });
  const client = localDynamoDbClient(server.endpoint);
  try {
    await use(client);
  } finally {
    client.destroy();
  }
  return server;
}

/**
 * Runs `testing/snapshot-child.ts` in a child Node process: a server kept in `snapshotFile` that ingests
 * `count` events. Resolves, once they are in, with the child and its server's process id.
 */
async function ingestingChild(
  snapshotFile: string,
  count: number,
): Promise<{ child: ChildProcess; serverPid: number }> {
  const script = fileURLToPath(new URL('./testing/snapshot-child.ts', import.meta.url));
  const child = spawn(process.execPath, ['--import', 'tsx', script, snapshotFile, String(count)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const serverPid = await new Promise<number>((resolve, reject) => {
    let output = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const match = /INGESTED (\d+)/.exec(output);
      if (match) resolve(Number(match[1]));
    });
    child.once('exit', (code) =>
      reject(new Error(`the child exited (${code}) before it ingested: ${output}`)),
    );
  });
  return { child, serverPid };
}

/** Resolves once no process with this id runs. */
async function gone(pid: number | undefined): Promise<void> {
  while (isRunning(pid)) await new Promise((resolve) => setTimeout(resolve, 50));
}

describe('DynamoDB Local in memory, kept in a snapshot file', () => {
  it('keeps what EventLogWriter wrote through a stop, and through a SIGKILL of the Node process that ran it', async () => {
    // Prepare
    const dir = await mkdtemp(join(tmpdir(), 'sluice-ddb-snapshot-'));
    const snapshotFile = join(dir, 'dynamodb', 'shared-local-instance.db');
    const lines: string[] = [];
    try {
      // Act: write 600 and stop; then a child process writes 400 and is killed with SIGKILL (its server sees
      // its stdin close and writes the last snapshot on the way out); then restart and count.
      const first = await withSnapshotServer(snapshotFile, async (client) => {
        await createLocalTables(client);
        await ingestGeneratedEvents(client, 1, 600);
      });
      await first.stop();
      const { child, serverPid } = await ingestingChild(snapshotFile, 400);
      child.kill('SIGKILL');
      await gone(serverPid);
      let counted = 0;
      const restarted = await withSnapshotServer(
        snapshotFile,
        async (client) => {
          counted = await countEvents(client);
        },
        { log: (line) => lines.push(line) },
      );
      await restarted.stop();
      // Assess
      expect(counted).toBe(1000);
      expect(
        lines.filter((line) => line.startsWith(`DynamoDB: tables restored from ${snapshotFile}`)),
      ).toHaveLength(1);
      expect(existsSync(`${snapshotFile}.tmp`)).toBe(false);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('loses, when the server itself is killed with SIGKILL, only what came after its last interval snapshot', async () => {
    // Prepare
    const dir = await mkdtemp(join(tmpdir(), 'sluice-ddb-interval-'));
    const snapshotFile = join(dir, 'shared-local-instance.db');
    const snapshots: string[] = [];
    try {
      const server = await withSnapshotServer(
        snapshotFile,
        async (client) => {
          await createLocalTables(client);
          await ingestGeneratedEvents(client, 1, 500);
          // Act: wait until the interval snapshots hold the 500 (a snapshot can begin while they are still being
          // written; one that missed some is followed by another, since the data changed after it began: so wait
          // for a snapshot and then a quiet spell of several intervals), write 300 more, and kill the JVM.
          let seen = 0;
          do {
            seen = snapshots.length;
            await new Promise((resolve) => setTimeout(resolve, 5_000));
          } while (snapshots.length === 0 || snapshots.length !== seen);
          await ingestGeneratedEvents(client, 2, 300);
        },
        { snapshotIntervalMs: 1_000, log: (line) => snapshots.push(line) },
      );
      // (a snapshot can fall during the 300 or between their end and the kill: then it holds some or all of them)
      process.kill(server.pid as number, 'SIGKILL');
      await server.stop();
      let counted = 0;
      const restarted = await withSnapshotServer(snapshotFile, async (client) => {
        counted = await countEvents(client);
      });
      await restarted.stop();
      // Assess
      expect(snapshots[0]).toMatch(/^DynamoDB: snapshot written to .+ \(\d+\.\d MB\) in \d+ ms$/);
      expect(counted).toBeGreaterThanOrEqual(500);
      expect(counted).toBeLessThanOrEqual(800);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('refuses to start on a file that is not a database, names it, and leaves it as it was', async () => {
    // Prepare
    const dir = await mkdtemp(join(tmpdir(), 'sluice-ddb-corrupt-'));
    const snapshotFile = join(dir, 'shared-local-instance.db');
    const garbage = 'not a database, '.repeat(512);
    await writeFile(snapshotFile, garbage);
    try {
      // Act
      const started = startDynamoDbLocal({ snapshotFile, quickStart: true });
      // Assess
      await expect(started).rejects.toThrow(
        `DynamoDB Local cannot restore its tables from ${snapshotFile}: file is encrypted or is not a database.`,
      );
      await expect(started).rejects.toThrow('npm start -- --fresh');
      expect(await readFile(snapshotFile, 'utf8')).toBe(garbage);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
