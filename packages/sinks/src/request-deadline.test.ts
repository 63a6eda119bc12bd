import { randomBytes } from 'node:crypto';
import diagnostics from 'node:diagnostics_channel';
import type { Socket } from 'node:net';
import { Readable } from 'node:stream';
import { type BucketLocation, ConnectionFailedError } from '@sluice/core';
import { afterEach, describe, expect, it } from 'vitest';
import { type SlowAnswer, type SlowBucket, startSlowBucket } from '../../../test/helpers/slow-bucket.js';
import { BucketError } from './classify.js';
import { createBucketClient } from './client.js';
import { MAX_RESPONSE_BYTES } from './request-deadline.js';
import { endpointFailureMessage, testConnection } from './connection-test.js';
import { uploadStream } from './upload.js';
import { S3BucketWriter } from './writer.js';

/**
 * A bucket host that accepts requests and then sends a byte every 100 ms is never idle long enough for the
 * socket's idle timeout: only a total deadline ends the call. Each test sets the deadline small (1 s).
 */
const TRICKLE_INTERVAL_MS = 100;
const DEADLINE_MS = 1_000;
const credentials = { accessKeyId: 'AKIASLOWBUCKET000000', secretAccessKey: 'slow-bucket-secret' };

let slow: SlowBucket | undefined;

/** What the promise rejected with (a resolved promise gives undefined, which fails the assertions). */
const caught = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: Error) => error,
  ) as Promise<Error>;

afterEach(async () => {
  await slow?.close();
  slow = undefined;
});

async function slowBucket(answerFor: (method: string, url: string) => SlowAnswer) {
  slow = await startSlowBucket({ intervalMs: TRICKLE_INTERVAL_MS, answerFor });
  const location: BucketLocation = {
    provider: 's3',
    bucket: 'slow-bucket',
    region: 'auto',
    endpoint: slow.endpoint,
    pathPrefix: 'exports',
  };
  return { server: slow, location, allowedEndpoints: new Set([slow.endpoint]) };
}

describe('the total deadline of a connection test', () => {
  it.each<SlowAnswer>(['headers', 'body'])(
    'ends a test whose server trickles its %s, with "did not answer in 1 s"',
    async (trickled) => {
      // Prepare
      const { server, location, allowedEndpoints } = await slowBucket(() => trickled);

      // Act
      const error = await caught(
        testConnection(location, credentials, { now: new Date(), allowedEndpoints, deadlineMs: DEADLINE_MS }),
      );

      // Assess
      expect(error).toBeInstanceOf(ConnectionFailedError);
      expect(error).toMatchObject({ retryable: true });
      // A custom endpoint: the one message of every endpoint that could not be used (issue 28).
      expect(error.message).toBe(endpointFailureMessage(server.endpoint));
      expect(server.requests[0]).toMatch(/^PUT \/slow-bucket\/exports\/_sluice\/connection-test\.json/);
    },
  );
});

describe('the deadline of each upload request', () => {
  it('ends a single-request upload whose server trickles the answer, as a retryable BucketError', async () => {
    // Prepare
    const { server, location, allowedEndpoints } = await slowBucket(() => 'body');
    const client = createBucketClient(location, credentials, {
      allowedEndpoints,
      maxAttempts: 1,
      requestDeadlineMs: DEADLINE_MS,
    });
    const writer = new S3BucketWriter({ location, client });

    // Act
    const error = await caught(writer.writeFile('exports/file.jsonl.gz', ['{"id":1}']));
    client.destroy();

    // Assess
    expect(error).toBeInstanceOf(BucketError);
    expect(error).toMatchObject({ name: 'BucketUnreachable', retryable: true });
    expect(error.message).toContain('did not answer in 1 s');
    expect(server.requests).toEqual([expect.stringMatching(/^PUT \/slow-bucket\/exports\/file\.jsonl\.gz/)]);
  });

  it('retries a trickled request as the client allows, each attempt with its own deadline', async () => {
    const { server, location, allowedEndpoints } = await slowBucket(() => 'headers');
    const client = createBucketClient(location, credentials, {
      allowedEndpoints,
      maxAttempts: 2,
      requestDeadlineMs: DEADLINE_MS,
    });
    const error = await caught(new S3BucketWriter({ location, client }).writeMarker('exports/_SUCCESS', ''));
    client.destroy();
    expect(error.message).toContain('did not answer in 1 s');
    expect(server.requests).toHaveLength(2);
  });

  it('ends a multipart upload at a trickled part and aborts the upload', async () => {
    // Prepare: the server answers everything at once except the parts.
    const { server, location, allowedEndpoints } = await slowBucket((method, url) =>
      method === 'PUT' && url.includes('partNumber=') ? 'headers' : 'answer',
    );
    const client = createBucketClient(location, credentials, {
      allowedEndpoints,
      maxAttempts: 1,
      requestDeadlineMs: DEADLINE_MS,
    });
    const partSize = 5 * 1024 * 1024;

    // Act
    const error = await caught(
      uploadStream(
        client,
        {
          bucket: location.bucket,
          key: 'exports/big.bin',
          body: Readable.from([randomBytes(partSize + 1024)]),
          partSize,
          queueSize: 1,
        },
        location,
      ),
    );
    client.destroy();

    // Assess
    expect(error).toBeInstanceOf(BucketError);
    expect(error.message).toContain('did not answer in 1 s');
    const methods = server.requests.map((request) => request.split(' ')[0]);
    expect(methods[0]).toBe('POST');
    expect(methods).toContain('PUT');
    expect(methods.at(-1)).toBe('DELETE');
  });
});

/** The bytes each client socket opened during `act` read from the network, headers included. */
async function bytesReadBySockets(act: () => Promise<unknown>): Promise<number[]> {
  const sockets: Socket[] = [];
  const onSocket = (message: unknown) => sockets.push((message as { socket: Socket }).socket);
  diagnostics.subscribe('net.client.socket', onSocket);
  try {
    await act();
  } finally {
    diagnostics.unsubscribe('net.client.socket', onSocket);
  }
  return sockets.map((socket) => socket.bytesRead);
}

/** The bound of one answer read: the cap (head and body), and one socket read beyond it. */
const READ_BOUND = MAX_RESPONSE_BYTES + 64 * 1024;

describe('the bound on what is read of an answer', () => {
  it('ends a connection test whose host answers a 50 MiB error body, having read at most 1 MiB + 64 KiB', async () => {
    // Prepare
    const { server, location, allowedEndpoints } = await slowBucket(() => 'huge-error');
    let error: Error | undefined;

    // Act
    const read = await bytesReadBySockets(async () => {
      error = await caught(testConnection(location, credentials, { now: new Date(), allowedEndpoints }));
    });

    // Assess
    expect(error).toBeInstanceOf(ConnectionFailedError);
    // A custom endpoint: the one message of every endpoint that could not be used (issue 28).
    expect(error?.message).toBe(endpointFailureMessage(server.endpoint));
    expect(server.requests).toHaveLength(1);
    expect(read.length).toBeGreaterThan(0);
    for (const bytes of read) expect(bytes).toBeLessThanOrEqual(READ_BOUND);
  });

  it('reads at most 1 MiB + 64 KiB of a 50 MiB lifecycle configuration, and warns that it could not read it', async () => {
    // Prepare
    const { server, location, allowedEndpoints } = await slowBucket((method) =>
      method === 'GET' ? 'huge' : 'answer',
    );
    let result: Awaited<ReturnType<typeof testConnection>> | undefined;

    // Act
    const read = await bytesReadBySockets(async () => {
      result = await testConnection(location, credentials, { now: new Date(), allowedEndpoints });
    });

    // Assess
    expect(result?.warnings).toEqual([
      expect.objectContaining({
        code: 'no_abort_incomplete_multipart_rule',
        message: expect.stringContaining('could not read'),
      }),
    ]);
    expect(server.requests.map((request) => request.split(' ')[0])).toEqual(['PUT', 'PUT', 'GET']);
    const total = read.reduce((sum, bytes) => sum + bytes, 0);
    expect(total).toBeLessThanOrEqual(READ_BOUND);
  });

  it('ends a writer request whose host answers a 50 MiB body as a permanent BucketError, read to 1 MiB + 64 KiB', async () => {
    // Prepare
    const { location, allowedEndpoints } = await slowBucket(() => 'huge');
    const client = createBucketClient(location, credentials, { allowedEndpoints });
    let error: Error | undefined;

    // Act
    const read = await bytesReadBySockets(async () => {
      error = await caught(new S3BucketWriter({ location, client }).writeMarker('exports/_SUCCESS', ''));
    });
    client.destroy();

    // Assess
    expect(error).toMatchObject({ name: 'BucketNotSupported', retryable: false });
    for (const bytes of read) expect(bytes).toBeLessThanOrEqual(READ_BOUND);
  });
});

describe('the deadline until the answer is parsed', () => {
  it('fails an answer that arrived in time but was still being parsed at the deadline', async () => {
    // Prepare: every answer at once; then 1.5 s between the body's arrival and the end of parsing.
    const { location, allowedEndpoints } = await slowBucket(() => 'answer');
    const client = createBucketClient(location, credentials, {
      allowedEndpoints,
      maxAttempts: 1,
      requestDeadlineMs: DEADLINE_MS,
    });
    client.middlewareStack.add(
      (next) => async (args) => {
        const output = await next(args);
        await new Promise((resolve) => setTimeout(resolve, 1_500));
        return output;
      },
      { step: 'deserialize', priority: 'high' },
    );

    // Act
    const error = await caught(new S3BucketWriter({ location, client }).writeMarker('exports/_SUCCESS', ''));
    client.destroy();

    // Assess
    expect(error).toMatchObject({ name: 'BucketUnreachable', retryable: true });
    expect(error.message).toContain('did not answer in 1 s');
  });
});
