import { createServer } from 'node:net';
import { DatabaseUnavailableError } from '@sluice/core';
import { describe, expect, it } from 'vitest';
import { createDocumentClient, isTransientDynamoError, mapDynamoError } from './client.js';
import { ControlStore } from './destinations.js';

/** A loopback port nothing listens on: bound, then closed. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

function awsError(name: string, httpStatusCode: number): Error {
  return Object.assign(new Error(name), { name, $metadata: { httpStatusCode } });
}

describe('mapDynamoError', () => {
  it('maps a real connection failure to a 503 with Retry-After', async () => {
    const port = await closedPort();
    const client = createDocumentClient({
      endpoint: `http://127.0.0.1:${port}`,
      region: 'us-east-1',
      credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
      maxAttempts: 1,
    });
    const store = new ControlStore({ client, tableName: 'control' });

    const failure = await store.getDestination('ws_1', 'exp_1').catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(DatabaseUnavailableError);
    expect(failure).toMatchObject({ name: 'DatabaseUnavailableError', retryable: true });
  });

  it.each([
    ['ProvisionedThroughputExceededException', 400],
    ['ThrottlingException', 400],
    ['RequestLimitExceeded', 400],
    ['InternalServerError', 500],
    ['ServiceUnavailable', 503],
  ])('maps %s to DatabaseUnavailableError', (name, status) => {
    const error = awsError(name, status);

    expect(() => mapDynamoError(error)).toThrow(DatabaseUnavailableError);
  });

  it('maps a timeout and a refused connection inside an AggregateError', () => {
    const timeout = Object.assign(new Error('timed out'), { name: 'TimeoutError' });
    const refused = new AggregateError([Object.assign(new Error('refused'), { code: 'ECONNREFUSED' })]);

    expect(isTransientDynamoError(timeout)).toBe(true);
    expect(isTransientDynamoError(refused)).toBe(true);
  });

  it('rethrows every other error as it is', () => {
    const conditional = awsError('ConditionalCheckFailedException', 400);
    const validation = awsError('ValidationException', 400);

    expect(() => mapDynamoError(conditional)).toThrow(conditional);
    expect(() => mapDynamoError(validation)).toThrow(validation);
  });
});
