import { randomUUID } from 'node:crypto';
import { DeleteMessageCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { Logger } from '@aws-lambda-powertools/logger';
import { describe, expect, it } from 'vitest';
import { workspaceSource } from './bus.js';
import { EventLogWriter } from './ingest.js';
import { type DeadLetter, type DeadLetterQueue, readDeadLetter, redriveDeadLetters } from './redrive.js';
import { SqsDeadLetterQueue } from './sqs-dead-letters.js';
import { eventTables } from '../../../test/helpers/tables.js';

const logger = new Logger({ serviceName: 'test', logLevel: 'SILENT' });
/** No erasure (what erasures leave out is tested with the real erasure log in `@sluice/archive` erasure.test.ts). */
const erasures = { erasuresOf: async () => [] };

function busEvent(workspaceId: string, events: unknown[], source = workspaceSource(workspaceId)) {
  return {
    version: '0',
    id: randomUUID(),
    'detail-type': 'sluice.events',
    source,
    time: new Date().toISOString(),
    detail: { workspaceId, events },
  };
}

/** A queue of fixed bodies that records what was deleted (the logic under test is redrive's, not a queue's). */
function fixedQueue(bodies: string[]): DeadLetterQueue & { deleted: string[] } {
  const pending = bodies.map((body, i) => ({ id: `m${i}`, body, receiptHandle: `r${i}` }));
  const deleted: string[] = [];
  return {
    deleted,
    receive: async (max: number) => pending.splice(0, max),
    delete: async (letter: DeadLetter) => {
      deleted.push(letter.id);
    },
  };
}

describe('readDeadLetter', () => {
  it('reads a Lambda on-failure record, a rule dead letter, and says why anything else is unreadable', () => {
    // Prepare
    const event = busEvent('ws_a', []);

    // Act
    const fromLambda = readDeadLetter(
      JSON.stringify({
        version: '1.0',
        requestContext: { condition: 'EventAgeExceeded', approximateInvokeCount: 1 },
        requestPayload: event,
        responsePayload: { errorType: 'UnwrittenItemsError', errorMessage: '…' },
      }),
    );
    const fromRule = readDeadLetter(JSON.stringify(event));

    // Assess
    expect(fromLambda).toEqual({
      kind: 'lambda-failure',
      event,
      condition: 'EventAgeExceeded',
      errorType: 'UnwrittenItemsError',
    });
    expect(fromRule).toEqual({ kind: 'undelivered', event });
    expect(readDeadLetter('{')).toEqual({ kind: 'unreadable', reason: 'not JSON' });
    expect(readDeadLetter('[]')).toEqual({ kind: 'unreadable', reason: 'not a JSON object' });
    expect(readDeadLetter('{"requestPayload":{"x":1}}')).toEqual({
      kind: 'unreadable',
      reason: 'requestPayload is not a bus event',
    });
  });
});

describe('redriveDeadLetters', () => {
  it('deletes written and refused messages, leaves unreadable ones, and counts each', async () => {
    // Prepare
    const workspaceId = `ws_${randomUUID()}`;
    const good = busEvent(workspaceId, [
      { dataset: 'custom_events', id: 'ce_1', event_name: 'x', occurred_at: Date.now() },
      { dataset: 'custom_events', id: 'ce_2', event_name: 'x', occurred_at: Date.now(), test: true },
    ]);
    const spoofed = busEvent(workspaceId, [], workspaceSource('other'));
    const queue = fixedQueue([JSON.stringify({ requestPayload: good }), JSON.stringify(spoofed), 'garbage']);

    // Act
    const summary = await redriveDeadLetters(
      queue,
      new EventLogWriter({ ...eventTables, logger, explicitRecordedAt: 'ignore' }),
      logger,
      { batchSize: 2, erasures },
    );

    // Assess
    expect(summary).toEqual({
      messages: 3,
      redriven: 2,
      events: { accepted: 1, dropped: { test: 1, history: 0, late: 0 }, invalid: 0 },
      subscribers: { upserted: 0, deleted: 0, invalid: 0 },
      refused: [{ messageId: 'm1', reason: expect.stringMatching(/^source: must be/) }],
      left: [{ messageId: 'm2', reason: 'not JSON' }],
      erased: { events: 0, subscribers: 0 },
    });
    expect(queue.deleted).toEqual(['m0', 'm1']);
  });

  it('stops after maxMessages', async () => {
    // Prepare
    const queue = fixedQueue(['a', 'b', 'c']);

    // Act
    const summary = await redriveDeadLetters(
      queue,
      new EventLogWriter({ ...eventTables, logger, explicitRecordedAt: 'ignore' }),
      logger,
      { maxMessages: 2, erasures },
    );

    // Assess
    expect(summary.messages).toBe(2);
  });
});

describe('SqsDeadLetterQueue', () => {
  it('short-polls at most 10 messages hidden for the visibility timeout, and deletes by receipt handle', async () => {
    // Prepare
    const sent: unknown[] = [];
    const client = {
      send: async (command: unknown) => {
        sent.push(command);
        return command instanceof ReceiveMessageCommand
          ? { Messages: [{ MessageId: 'id1', ReceiptHandle: 'rh1', Body: '{}' }, { MessageId: 'id2' }] }
          : {};
      },
    } as unknown as ConstructorParameters<typeof SqsDeadLetterQueue>[0]['client'];
    const queue = new SqsDeadLetterQueue({ queueUrl: 'https://sqs.example/q', client });

    // Act
    const letters = await queue.receive(25);
    await queue.delete(letters[0]!);

    // Assess
    expect(letters).toEqual([{ id: 'id1', body: '{}', receiptHandle: 'rh1' }]);
    expect(sent[0]).toBeInstanceOf(ReceiveMessageCommand);
    expect((sent[0] as ReceiveMessageCommand).input).toEqual({
      QueueUrl: 'https://sqs.example/q',
      MaxNumberOfMessages: 10,
      VisibilityTimeout: 300,
      WaitTimeSeconds: 0,
    });
    expect(sent[1]).toBeInstanceOf(DeleteMessageCommand);
    expect((sent[1] as DeleteMessageCommand).input).toEqual({
      QueueUrl: 'https://sqs.example/q',
      ReceiptHandle: 'rh1',
    });
  });
});
