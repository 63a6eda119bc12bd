import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BatchWriteItemCommand, type DynamoDBClient, type WriteRequest } from '@aws-sdk/client-dynamodb';
import { Logger } from '@aws-lambda-powertools/logger';
import {
  createEventLogClient,
  EVENT_SHARDS,
  EventLogWriter,
  eventPk,
  eventSk,
  generatedLine,
  generateEvents,
  hourStart,
  shardOf,
} from '@sluice/eventlog';
import { createDataCommands, runCommands } from '@sluice/cli';
import {
  type DynamoDbLocal,
  startDynamoDbLocal,
  createLocalTables,
  LOCAL_TABLE_NAMES,
  DYNAMODB_SNAPSHOT_FILE,
} from '@sluice/devstack';

/**
 * Local ingest: events through the CLI (`seed`, `events ingest --file`, both through `EventLogWriter`) into
 * DynamoDB Local as `npm start` runs it (in memory, kept in a snapshot file), beside raw BatchWriteItem (25 items,
 * 8 in flight, the rows' own items) into an in-memory DynamoDB Local started in the same run. The ratio of the
 * two is the figure (target ≥ 0.7). The paths run in alternating rounds, so that each sees the same load of a
 * shared machine. Also the Node side alone (generate or parse, validate, build the items) with a client that
 * answers at once, which shows how much of the CPU the CLI leaves to the Java server.
 */

/** One path's figures. */
export interface IngestPathFigures {
  name: string;
  rows: number;
  ms: number;
  rowsPerSecond: number;
  /** rows/s over the reference's (raw BatchWriteItem into the in-memory server). */
  ratio: number;
}

/** Options of {@link runIngestBench}. */
export interface IngestBenchOptions {
  /** Events per path, split over the rounds. */
  events: number;
  /** @default 4 */
  rounds?: number;
  log: (line: string) => void;
}

const silent = new Logger({ serviceName: 'bench', logLevel: 'SILENT' });
const nullStream = { isTTY: false, write: () => true };
const RAW_BATCH = 25;
const RAW_IN_FLIGHT = 8;

/** Writes requests with BatchWriteItem, 25 a call, 8 calls in flight; fails on unprocessed items. */
async function rawBatchWrite(client: DynamoDBClient, requests: readonly WriteRequest[]): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < requests.length) {
      const chunk = requests.slice(next, next + RAW_BATCH);
      next += RAW_BATCH;
      const output = await client.send(
        new BatchWriteItemCommand({ RequestItems: { [LOCAL_TABLE_NAMES.events]: chunk } }),
      );
      if (Object.keys(output.UnprocessedItems ?? {}).length > 0) throw new Error('unprocessed items');
    }
  };
  await Promise.all(Array.from({ length: RAW_IN_FLIGHT }, worker));
}

/** The items EventLogWriter would write for `count` generated events (recorded over the last hour). */
function rawRequests(count: number, seed: number): WriteRequest[] {
  const now = Date.now();
  const requests: WriteRequest[] = [];
  for (const event of generateEvents({
    count,
    seed,
    workspaceId: 'ws_bench_raw',
    from: now - 3_600_000,
    to: now,
  })) {
    const recordedMs = Date.parse(event.recorded_at as string);
    const pk = eventPk('ws_bench_raw', event.dataset, hourStart(recordedMs), shardOf(event.id, EVENT_SHARDS));
    requests.push({
      PutRequest: {
        Item: {
          PK: { S: pk },
          SK: { S: eventSk(recordedMs, event.id) },
          line: { S: generatedLine(event) },
          expiresAt: { N: String(Math.floor(recordedMs / 1000) + 35 * 86_400) },
        },
      },
    });
  }
  return requests;
}

/** A JSON-lines file of `count` generated events, as a platform team would feed `events ingest`. */
async function eventsFile(dir: string, count: number, seed: number): Promise<string> {
  const now = Date.now();
  const lines: string[] = [];
  for (const event of generateEvents({ count, seed, from: now - 3_600_000, to: now, recordedAt: false }))
    lines.push(JSON.stringify(event));
  const path = join(dir, `events-${seed}.jsonl`);
  await writeFile(path, `${lines.join('\n')}\n`);
  return path;
}

/** Runs one CLI data command in this process with `client` behind the writer. */
async function runCli(client: DynamoDBClient, name: string, args: string[]): Promise<void> {
  const commands = createDataCommands({
    writer: () =>
      new EventLogWriter({
        client,
        eventsTable: LOCAL_TABLE_NAMES.events,
        subscribersTable: LOCAL_TABLE_NAMES.subscribers,
        logger: silent,
        explicitRecordedAt: 'unchecked',
      }),
    out: () => {},
    err: () => {},
    progress: nullStream,
  });
  await runCommands(commands, [...name.split(' '), ...args]);
}

/** A client that answers every call at once, as if every item were written. */
const answeringClient = { send: async () => ({}) } as unknown as DynamoDBClient;

function clientFor(server: DynamoDbLocal): DynamoDBClient {
  return createEventLogClient({
    endpoint: server.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
}

/** Measures the paths; see the module documentation. */
export async function runIngestBench(options: IngestBenchOptions): Promise<IngestPathFigures[]> {
  const rounds = options.rounds ?? 4;
  const perRound = Math.ceil(options.events / rounds);
  const dir = await mkdtemp(join(tmpdir(), 'sluice-bench-ingest-'));
  const servers: DynamoDbLocal[] = [];
  const clients: DynamoDBClient[] = [];
  try {
    // Both with the JVM's full JIT, as `npm start` runs its server.
    const memory = await startDynamoDbLocal({ quickStart: false });
    servers.push(memory);
    // As `npm start` runs it: in memory, kept in a snapshot file (every 30 s when something changed).
    const kept = await startDynamoDbLocal({
      snapshotFile: join(dir, 'dynamodb', DYNAMODB_SNAPSHOT_FILE),
      quickStart: false,
    });
    servers.push(kept);
    const memoryClient = clientFor(memory);
    const keptClient = clientFor(kept);
    clients.push(memoryClient, keptClient);
    await createLocalTables(memoryClient);
    await createLocalTables(keptClient);

    const files: string[] = [];
    for (let round = 0; round < rounds; round++) files.push(await eventsFile(dir, perRound, 100 + round));
    const seedArgs = (round: number, path: string) => [
      '--workspace',
      `ws_bench_${path}_${round}`,
      '--events',
      String(perRound),
      '--seed',
      String(round + 1),
      '--json',
    ];
    const ingestArgs = (round: number) => [
      '--workspace',
      `ws_bench_file_${round}`,
      '--file',
      files[round]!,
      '--json',
    ];

    type Path = {
      name: string;
      prepare?: (round: number) => unknown;
      run: (round: number, prepared: unknown) => Promise<void>;
    };
    const paths: Path[] = [
      {
        name: 'raw BatchWriteItem → in-memory (reference)',
        prepare: (round) => rawRequests(perRound, 1_000 + round),
        run: (_, requests) => rawBatchWrite(memoryClient, requests as WriteRequest[]),
      },
      {
        name: 'raw BatchWriteItem → npm start storage',
        prepare: (round) => rawRequests(perRound, 2_000 + round),
        run: (_, requests) => rawBatchWrite(keptClient, requests as WriteRequest[]),
      },
      { name: 'CLI seed → in-memory', run: (round) => runCli(memoryClient, 'seed', seedArgs(round, 'mem')) },
      {
        name: 'CLI seed → npm start storage',
        run: (round) => runCli(keptClient, 'seed', seedArgs(round, 'kept')),
      },
      {
        name: 'CLI events ingest --file → npm start storage',
        run: (round) => runCli(keptClient, 'events ingest', ingestArgs(round)),
      },
    ];

    // Warm both servers' JIT before anything is timed.
    await rawBatchWrite(memoryClient, rawRequests(2_000, 1));
    await rawBatchWrite(keptClient, rawRequests(2_000, 2));

    const totals = paths.map(() => ({ rows: 0, ms: 0 }));
    for (let round = 0; round < rounds; round++) {
      for (const [index, path] of paths.entries()) {
        const prepared = path.prepare?.(round);
        const started = performance.now();
        await path.run(round, prepared);
        totals[index]!.ms += performance.now() - started;
        totals[index]!.rows += perRound;
      }
      options.log(`  round ${round + 1} of ${rounds} done`);
    }

    // The Node side alone: every row generated or parsed, validated and turned into items, none sent.
    const nodeOnly: { name: string; run: () => Promise<void> }[] = [
      { name: 'CLI seed, Node side only', run: () => runCli(answeringClient, 'seed', seedArgs(0, 'cpu')) },
      {
        name: 'CLI events ingest --file, Node side only',
        run: () => runCli(answeringClient, 'events ingest', ingestArgs(0)),
      },
    ];
    const reference = totals[0]!.rows / totals[0]!.ms;
    const figures: IngestPathFigures[] = paths.map((path, index) => {
      const { rows, ms } = totals[index]!;
      return { name: path.name, rows, ms, rowsPerSecond: (rows / ms) * 1000, ratio: rows / ms / reference };
    });
    for (const path of nodeOnly) {
      const started = performance.now();
      await path.run();
      const ms = performance.now() - started;
      figures.push({
        name: path.name,
        rows: perRound,
        ms,
        rowsPerSecond: (perRound / ms) * 1000,
        ratio: perRound / ms / reference,
      });
    }
    return figures;
  } finally {
    for (const client of clients) client.destroy();
    await Promise.allSettled(servers.map((server) => server.stop()));
    await rm(dir, { recursive: true, force: true });
  }
}
