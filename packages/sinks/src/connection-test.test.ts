import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { type BucketLocation, ConnectionFailedError, InvalidInputError } from '@sluice/core';
import { describe, expect, it } from 'vitest';
import { bucketClientConfig } from './client.js';
import { endpointFailureMessage, OVERWRITE_DENIED_MESSAGE, testConnection } from './connection-test.js';
import type { Resolver } from './endpoint.js';
import { localBucketOrigins } from '../../../test/helpers/tables.js';

const endpoint = process.env.SLUICE_LOCAL_S3_ENDPOINT as string;
const credentials = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };
const local: BucketLocation = {
  provider: 's3',
  bucket: 'local-exports',
  region: 'us-east-1',
  endpoint,
  pathPrefix: 'connection-tests/acme',
};
const now = () => new Date('2026-09-30T12:00:00.000Z');
/** The local s3rver is exempt from the endpoint rules, as the local runtime makes it. */
const allowedEndpoints = localBucketOrigins;

async function readJson(key: string): Promise<unknown> {
  const client = new S3Client(bucketClientConfig(local, credentials, { allowedEndpoints }));
  try {
    const object = await client.send(new GetObjectCommand({ Bucket: local.bucket, Key: key }));
    return JSON.parse(await (object.Body as { transformToString(): Promise<string> }).transformToString());
  } finally {
    client.destroy();
  }
}

async function failure(promise: Promise<unknown>): Promise<Error> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(Error);
  return error as Error;
}

describe('testConnection', () => {
  it('writes <prefix>/_sluice/connection-test.json to the bucket', async () => {
    const result = await testConnection(local, credentials, { now, allowedEndpoints });
    expect(result).toEqual({
      key: 'connection-tests/acme/_sluice/connection-test.json',
      testedAt: '2026-09-30T12:00:00.000Z',
      // s3rver answers NotImplemented to lifecycle requests: the could-not-check warning, never a failure
      warnings: [
        {
          code: 'no_abort_incomplete_multipart_rule',
          message: expect.stringContaining('s3:GetLifecycleConfiguration'),
        },
      ],
    });
    expect(result.warnings[0]?.message).toContain(
      '"AbortIncompleteMultipartUpload":{"DaysAfterInitiation":1}',
    );
    expect(result.warnings[0]?.message).toContain('"Prefix":"connection-tests/acme/"');
    expect(await readJson(result.key)).toEqual({ service: 'sluice', testedAt: '2026-09-30T12:00:00.000Z' });
  });

  it('does not check the lifecycle of a bucket at an origin of withoutLifecycleCheck (the local bucket)', async () => {
    // Act
    const result = await testConnection(local, credentials, {
      now,
      allowedEndpoints,
      withoutLifecycleCheck: allowedEndpoints,
    });
    // Assess: written, and no warning about rules s3rver cannot keep
    expect(result.warnings).toEqual([]);
    expect(await readJson(result.key)).toEqual({ service: 'sluice', testedAt: '2026-09-30T12:00:00.000Z' });
  });

  it('writes the file twice, so a key that cannot overwrite fails at create, naming the role to grant', async () => {
    // Prepare: s3rver behind a client that refuses the second PutObject as GCS does for objectCreator
    const puts: string[] = [];
    const client = new S3Client(bucketClientConfig(local, credentials, { allowedEndpoints }));
    client.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName !== 'PutObjectCommand') return next(args);
        puts.push((args.input as { Key: string }).Key);
        if (puts.length === 2) {
          throw Object.assign(new Error('Access denied.'), {
            name: 'AccessDenied',
            $metadata: { httpStatusCode: 403 },
          });
        }
        return next(args);
      },
      { step: 'initialize', name: 'refuseOverwrite' },
    );

    // Act
    const error = await failure(testConnection(local, credentials, { now, client, allowedEndpoints }));
    client.destroy();

    // Assess
    expect(puts).toEqual([
      'connection-tests/acme/_sluice/connection-test.json',
      'connection-tests/acme/_sluice/connection-test.json',
    ]);
    expect(error).toBeInstanceOf(ConnectionFailedError);
    expect(error).toMatchObject({ retryable: false });
    expect(error.message).toBe(OVERWRITE_DENIED_MESSAGE);
    expect(error.message).toContain('roles/storage.objectUser');
  });

  it('writes _sluice/connection-test.json at the bucket root for an empty prefix', async () => {
    const result = await testConnection({ ...local, pathPrefix: '' }, credentials, { now, allowedEndpoints });
    expect(result.key).toBe('_sluice/connection-test.json');
    expect(await readJson(result.key)).toMatchObject({ service: 'sluice' });
  });

  it('says the bucket does not exist', async () => {
    const error = await failure(
      testConnection({ ...local, bucket: 'acme-missing' }, credentials, { now, allowedEndpoints }),
    );
    expect(error).toBeInstanceOf(ConnectionFailedError);
    expect(error).toMatchObject({ retryable: false });
    expect(error.message).toBe(
      `Bucket "acme-missing" does not exist at ${new URL(endpoint).origin}. Check the bucket name.`,
    );
  });

  it('says the access key is unknown, and never shows the secret', async () => {
    const secret = 'a-very-secret-value-1234567890';
    const error = await failure(
      testConnection(
        local,
        { accessKeyId: 'UNKNOWNKEY', secretAccessKey: secret },
        { now, allowedEndpoints },
      ),
    );
    expect(error).toBeInstanceOf(ConnectionFailedError);
    expect(error.message).toContain('does not recognise the access key ID');
    expect(error.message).not.toContain(secret);
    expect(JSON.stringify(error)).not.toContain(secret);
  });

  // Issue 28: told apart, these would make the API a scanner of which public hosts and ports answer and how.
  it.each([
    ['nothing listens (closed port)', 'http://127.0.0.1:9'],
    ['the port speaks plain HTTP, not TLS', endpoint.replace(/^http:/, 'https:')],
  ])('gives a custom endpoint where %s one message, without errno or host detail', async (_, custom) => {
    const error = await failure(
      testConnection({ ...local, endpoint: custom }, credentials, {
        now,
        allowedEndpoints: new Set([new URL(custom).origin]),
      }),
    );
    expect(error).toBeInstanceOf(ConnectionFailedError);
    expect(error).toMatchObject({ retryable: true });
    expect(error.message).toBe(endpointFailureMessage(custom));
    expect(error.message).not.toMatch(/refused|E[A-Z]{4,}|SSL|TLS_|certificate has|packet/);
  });

  it.each([
    'http://127.0.0.1:1',
    'https://127.0.0.1',
    'https://localhost',
    'https://169.254.169.254',
    'https://[::ffff:127.0.0.1]',
    'https://2130706433',
    'https://user:pass@s3.example.com',
    'https://s3.example.com/bucket',
  ])('refuses the endpoint %s before any request', async (unsafe) => {
    const error = await failure(
      testConnection({ ...local, endpoint: unsafe }, credentials, { now, allowedEndpoints }),
    );
    expect(error).toBeInstanceOf(InvalidInputError);
    expect(error).toMatchObject({ issues: [{ path: 'endpoint' }] });
  });

  it('refuses a name that resolves to a private address', async () => {
    const resolve: Resolver = async () => [{ address: '192.168.10.20', family: 4 }];
    const error = await failure(
      testConnection({ ...local, endpoint: 'https://s3.acme-storage.com' }, credentials, { now, resolve }),
    );
    expect(error).toBeInstanceOf(InvalidInputError);
    expect(error.message).toContain('resolves to a private, loopback or reserved address');
  });
});
