import type { BatchWriteItemCommand, DynamoDBClient, WriteRequest } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { batchWrite, UnwrittenItemsError } from './batch.js';

const TABLE = 'events';

function requests(n: number): WriteRequest[] {
  return Array.from({ length: n }, (_, i) => ({
    PutRequest: { Item: { PK: { S: 'p' }, SK: { S: String(i) }, line: { S: '{}' } } },
  }));
}

/**
 * A minimal fake of the one call batchWrite makes: it records every batch and answers from a script
 * (how many of the batch to leave unprocessed, or an error to throw).
 */
function fakeClient(script: (call: number, batch: WriteRequest[]) => number | Error) {
  const calls: WriteRequest[][] = [];
  const client = {
    async send(command: BatchWriteItemCommand) {
      const batch = command.input.RequestItems?.[TABLE] ?? [];
      calls.push(batch);
      const answer = script(calls.length, batch);
      if (answer instanceof Error) throw answer;
      return { UnprocessedItems: answer > 0 ? { [TABLE]: batch.slice(batch.length - answer) } : {} };
    },
  };
  return { client: client as unknown as DynamoDBClient, calls };
}

const noSleep = { sleep: async () => {}, random: () => 0.5 };

describe('batchWrite', () => {
  it('writes in chunks of 25', async () => {
    const { client, calls } = fakeClient(() => 0);
    const written = await batchWrite(client, TABLE, requests(60), { ...noSleep, concurrency: 1 });
    expect(written).toBe(60);
    expect(calls.map((batch) => batch.length)).toEqual([25, 25, 10]);
  });

  it('retries unprocessed items until they are written, with growing jittered backoff', async () => {
    // Prepare: the first two calls leave 10, then 3 items unprocessed.
    const { client, calls } = fakeClient((call) => (call === 1 ? 10 : call === 2 ? 3 : 0));
    const sleeps: number[] = [];

    // Act
    const written = await batchWrite(client, TABLE, requests(25), {
      sleep: async (ms) => {
        sleeps.push(ms);
      },
      random: () => 0.5,
      baseDelayMs: 100,
    });

    // Assess: exactly the unprocessed items were sent again.
    expect(written).toBe(25);
    expect(calls.map((batch) => batch.length)).toEqual([25, 10, 3]);
    expect(calls[2]).toEqual(calls[1]!.slice(7));
    expect(sleeps).toEqual([50, 100]);
  });

  it('caps the backoff', async () => {
    const { client } = fakeClient((call) => (call < 6 ? 1 : 0));
    const sleeps: number[] = [];
    await batchWrite(client, TABLE, requests(3), {
      sleep: async (ms) => {
        sleeps.push(ms);
      },
      random: () => 0.999,
      baseDelayMs: 100,
      maxDelayMs: 500,
    });
    expect(sleeps).toEqual([99, 199, 399, 499, 499]);
  });

  it('gives up after maxAttempts and says how many items were not written', async () => {
    const { client, calls } = fakeClient((_call, batch) => (batch.length === 25 ? 4 : batch.length));
    const failure = batchWrite(client, TABLE, requests(30), { ...noSleep, maxAttempts: 3, concurrency: 1 });
    await expect(failure).rejects.toBeInstanceOf(UnwrittenItemsError);
    await expect(failure).rejects.toMatchObject({
      unwritten: 9,
      total: 30,
      message: expect.stringContaining('9 of 30 items were not written to events after 3 attempts'),
    });
    // 3 calls for each chunk.
    expect(calls).toHaveLength(6);
  });

  it('retries throttling errors and rethrows other errors at once', async () => {
    const throttled = Object.assign(new Error('slow down'), {
      name: 'ProvisionedThroughputExceededException',
    });
    const retried = fakeClient((call) => (call === 1 ? throttled : 0));
    await expect(batchWrite(retried.client, TABLE, requests(5), noSleep)).resolves.toBe(5);
    expect(retried.calls).toHaveLength(2);

    const invalid = Object.assign(new Error('bad item'), { name: 'ValidationException' });
    const failed = fakeClient(() => invalid);
    await expect(batchWrite(failed.client, TABLE, requests(5), noSleep)).rejects.toBe(invalid);
    expect(failed.calls).toHaveLength(1);
  });
});
