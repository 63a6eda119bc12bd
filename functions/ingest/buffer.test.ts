/**
 * The buffer between the bus and ingest, on this machine: one-row PutEvents entries through the local bus, its
 * ingest rule's stream and the event source mapping (batching window, partial batch failures, retries, the
 * on-failure record) into the ingest function's handler, writing into DynamoDB Local.
 */
import { randomUUID } from 'node:crypto';
import { Logger } from '@aws-lambda-powertools/logger';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import { DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { ErasureLogStore } from '@sluice/control';
import {
  type BusLocal,
  type KinesisFailureRecord,
  LocalStream,
  MemoryDeadLetterQueue,
  type StreamMapping,
  startBusLocal,
  startStreamMapping,
} from '@sluice/devstack';
import {
  EVENTS_DETAIL_TYPE,
  EventLogReader,
  EventLogWriter,
  type IngestCallOptions,
  redriveDeadLetters,
  SUBSCRIBERS_DETAIL_TYPE,
  WORKSPACE_SOURCE_PREFIX,
  workspaceSource,
} from '@sluice/eventlog';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { controlTable, eventTables } from '../../test/helpers/tables.js';

let createIngestHandler: typeof import('./handler.js').createIngestHandler;
const logger = new Logger({ serviceName: 'test', logLevel: 'SILENT' });
const documents = DynamoDBDocumentClient.from(new DynamoDBClient({}));

beforeAll(async () => {
  process.env.POWERTOOLS_LOG_LEVEL = 'SILENT';
  ({ createIngestHandler } = await import('./handler.js'));
});

/** A writer whose writes for one workspace fail, as throttling past the retries does. */
class PoisonedWriter extends EventLogWriter {
  readonly poisonedCalls: string[] = [];
  constructor(private readonly poisoned: string) {
    super({ ...eventTables, logger, explicitRecordedAt: 'ignore' });
  }
  override async ingestEvents(workspaceId: string, inputs: readonly unknown[], options?: IngestCallOptions) {
    if (workspaceId === this.poisoned) {
      this.poisonedCalls.push(workspaceId);
      throw Object.assign(new Error('throttled past the retries'), { name: 'UnwrittenItemsError' });
    }
    return super.ingestEvents(workspaceId, inputs, options);
  }
}

let running: { bus: BusLocal; mapping: StreamMapping } | undefined;
afterEach(async () => {
  await running?.mapping.stop();
  await running?.bus.stop();
  running = undefined;
});

/** The local bus with the ingest rule's stream, and the mapping invoking `handler`. */
async function buffer(
  handler: Parameters<typeof startStreamMapping>[1],
  onFailure: (record: KinesisFailureRecord) => Promise<void> = async () => {},
) {
  const stream = new LocalStream();
  const bus = await startBusLocal({
    rules: [
      {
        sourcePrefix: WORKSPACE_SOURCE_PREFIX,
        detailTypes: [EVENTS_DETAIL_TYPE, SUBSCRIBERS_DETAIL_TYPE],
        target: stream,
      },
    ],
  });
  const mapping = startStreamMapping(stream, handler, {
    batchSize: 1000,
    batchingWindowMs: 300,
    maxRetryAttempts: 2,
    onFailure,
  });
  running = { bus, mapping };
  const client = new EventBridgeClient({ endpoint: bus.endpoint, region: 'us-east-1' });
  /** One row an entry, ten entries a PutEvents call, as a producer that does not batch sends. */
  const send = async (rows: { workspaceId: string; id: string }[]) => {
    for (let i = 0; i < rows.length; i += 10) {
      await client.send(
        new PutEventsCommand({
          Entries: rows.slice(i, i + 10).map(({ workspaceId, id }) => ({
            Source: workspaceSource(workspaceId),
            DetailType: EVENTS_DETAIL_TYPE,
            Detail: JSON.stringify({
              workspaceId,
              events: [{ dataset: 'custom_events', id, event_name: 'order.placed', occurred_at: Date.now() }],
            }),
          })),
        }),
      );
    }
  };
  return { stream, mapping, send };
}

async function segments(workspaceId: string): Promise<number[]> {
  const counts: number[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await documents.send(
      new ScanCommand({
        TableName: eventTables.eventsTable,
        FilterExpression: 'begins_with(PK, :ws) AND contains(PK, :seg)',
        ExpressionAttributeValues: { ':ws': `${workspaceId}#`, ':seg': '#seg' },
        ...(start ? { ExclusiveStartKey: start } : {}),
      }),
    );
    for (const item of page.Items ?? []) counts.push(Number(item.count));
    start = page.LastEvaluatedKey;
  } while (start);
  return counts;
}

async function ids(workspaceId: string, from: number): Promise<string[]> {
  const all: string[] = [];
  for await (const page of new EventLogReader(eventTables).readWindow(
    workspaceId,
    'custom_events',
    from,
    Date.now() + 1,
  ))
    all.push(...page.lines.map((line) => JSON.parse(line).id as string));
  return all.sort();
}

describe('the buffer between the bus and ingest', () => {
  it('writes one-row bus entries in segments of many rows', async () => {
    // Prepare
    const workspaceId = `ws_${randomUUID()}`;
    const start = Date.now() - 1;
    const writer = new EventLogWriter({ ...eventTables, logger, explicitRecordedAt: 'ignore' });
    const { mapping, send } = await buffer(createIngestHandler(writer, logger) as never);
    const rows = Array.from({ length: 40 }, (_, i) => ({ workspaceId, id: `ce_${i}` }));

    // Act
    await send(rows);
    await mapping.drain();

    // Assess: 40 entries, far fewer invocations and segments, every row once
    expect(await ids(workspaceId, start)).toEqual(rows.map((r) => r.id).sort());
    const counts = await segments(workspaceId);
    expect(counts.reduce((a, b) => a + b, 0)).toBe(40);
    expect(counts.length).toBeLessThanOrEqual(4);
    expect(Math.max(...counts)).toBeGreaterThanOrEqual(10);
    expect(mapping.invocations.length).toBeLessThan(40);
  });

  it('dead-letters a poisoned entry after its attempts, keeps the rest of its batch, and redrive writes it', async () => {
    // Prepare
    const good = `ws_${randomUUID()}`;
    const poisoned = `ws_${randomUUID()}`;
    const start = Date.now() - 1;
    const writer = new PoisonedWriter(poisoned);
    const queue = new MemoryDeadLetterQueue();
    const { mapping, send } = await buffer(
      createIngestHandler(writer, logger, { deadLetters: queue }) as never,
    );
    const rows = [
      ...Array.from({ length: 6 }, (_, i) => ({ workspaceId: good, id: `ce_${i}` })),
      { workspaceId: poisoned, id: 'ce_p1' },
      { workspaceId: poisoned, id: 'ce_p2' },
      ...Array.from({ length: 6 }, (_, i) => ({ workspaceId: good, id: `ce_${i + 6}` })),
    ];

    // Act
    await send(rows);
    await mapping.drain();

    // Assess: the good workspace's rows, before and after the poisoned ones, are written; the two poisoned
    // entries are in the queue, each after 3 attempts (the group, then twice alone)
    expect(await ids(good, start)).toHaveLength(12);
    expect(queue.size).toBe(2);
    expect(writer.poisonedCalls).toHaveLength(1 + 2 * 2);

    // Act: the write works again; an operator redrives
    const summary = await redriveDeadLetters(
      queue,
      new EventLogWriter({ ...eventTables, logger, explicitRecordedAt: 'ignore' }),
      logger,
      { erasures: new ErasureLogStore(controlTable) },
    );

    // Assess
    expect(summary).toMatchObject({ messages: 2, redriven: 2, left: [] });
    expect(await ids(poisoned, start)).toEqual(['ce_p1', 'ce_p2']);
  });

  it('reports an entry it could not dead-letter as a partial batch failure: retried from it, then discarded with its sequence numbers', async () => {
    // Prepare: the dead-letter queue refuses sends
    const good = `ws_${randomUUID()}`;
    const poisoned = `ws_${randomUUID()}`;
    const start = Date.now() - 1;
    const writer = new PoisonedWriter(poisoned);
    const failures: KinesisFailureRecord[] = [];
    const handler = createIngestHandler(writer, logger, {
      deadLetters: { send: async () => Promise.reject(new Error('queue unavailable')) },
    });
    const batches: number[] = [];
    const { mapping, send } = await buffer(
      async (event) => {
        batches.push(event.Records.length);
        return (await handler(event as never)) as never;
      },
      async (record) => {
        failures.push(record);
      },
    );

    // Act: 3 good entries, the poisoned one, 2 good ones
    await send([
      { workspaceId: good, id: 'ce_1' },
      { workspaceId: good, id: 'ce_2' },
      { workspaceId: good, id: 'ce_3' },
      { workspaceId: poisoned, id: 'ce_p' },
      { workspaceId: good, id: 'ce_4' },
      { workspaceId: good, id: 'ce_5' },
    ]);
    await mapping.drain();

    // Assess: the first invocation has all 6; the retries start at the poisoned record (3 left); after the
    // maximum retries the mapping discards from it with an on-failure record of sequence numbers
    expect(batches).toEqual([6, 3, 3]);
    expect(failures).toEqual([
      expect.objectContaining({
        requestContext: expect.objectContaining({ condition: 'RetryAttemptsExhausted' }),
        KinesisBatchInfo: expect.objectContaining({ batchSize: 3 }),
      }),
    ]);
    // The good rows after it were written by each attempt: at least once, never lost.
    expect(new Set(await ids(good, start))).toEqual(new Set(['ce_1', 'ce_2', 'ce_3', 'ce_4', 'ce_5']));
  });
});
