import { afterEach, describe, expect, it } from 'vitest';
import {
  type KinesisFailureRecord,
  type LocalKinesisEvent,
  LocalStream,
  type StreamMapping,
  startStreamMapping,
} from './stream-local.js';

let mapping: StreamMapping | undefined;
afterEach(async () => {
  await mapping?.stop();
  mapping = undefined;
});

const data = (event: LocalKinesisEvent) =>
  event.Records.map((r) => Buffer.from(r.kinesis.data, 'base64').toString('utf8'));

describe('the local event source mapping over a stream', () => {
  it('gathers the records put within the batching window into one invocation, in order', async () => {
    // Prepare
    const stream = new LocalStream();
    const seen: string[][] = [];
    mapping = startStreamMapping(
      stream,
      async (event) => {
        seen.push(data(event));
        return { batchItemFailures: [] };
      },
      { batchSize: 100, batchingWindowMs: 200, onFailure: async () => {} },
    );

    // Act
    for (let i = 0; i < 5; i++) stream.put(`r${i}`, 'ws');
    await mapping.drain();

    // Assess
    expect(seen).toEqual([['r0', 'r1', 'r2', 'r3', 'r4']]);
  });

  it('halves a batch that throws until the bad record is alone, retries it, then discards it with its sequence numbers', async () => {
    // Prepare
    const stream = new LocalStream();
    const seen: string[][] = [];
    const failures: KinesisFailureRecord[] = [];
    mapping = startStreamMapping(
      stream,
      async (event) => {
        const records = data(event);
        seen.push(records);
        if (records.includes('bad')) throw new Error('poisoned');
        return undefined;
      },
      {
        batchSize: 100,
        batchingWindowMs: 100,
        maxRetryAttempts: 2,
        bisectOnError: true,
        onFailure: async (record) => {
          failures.push(record);
        },
      },
    );

    // Act
    for (const r of ['a', 'b', 'bad', 'c']) stream.put(r, 'ws');
    await mapping.drain();

    // Assess: every good record processed once; the bad one alone 3 times (the first and 2 retries), discarded
    expect(seen).toEqual([
      ['a', 'b', 'bad', 'c'],
      ['a', 'b'],
      ['bad', 'c'],
      ['bad'],
      ['bad'],
      ['bad'],
      ['c'],
    ]);
    expect(failures).toEqual([
      expect.objectContaining({
        requestContext: expect.objectContaining({
          condition: 'RetryAttemptsExhausted',
          approximateInvokeCount: 3,
        }),
        KinesisBatchInfo: expect.objectContaining({
          batchSize: 1,
          startSequenceNumber: '000000000000000000003',
          endSequenceNumber: '000000000000000000003',
        }),
      }),
    ]);
  });
});
