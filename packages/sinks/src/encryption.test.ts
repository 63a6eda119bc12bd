import { randomBytes, randomUUID } from 'node:crypto';
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { type BucketLocation, ConnectionFailedError } from '@sluice/core';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, describe, expect, it } from 'vitest';
import { classifyBucketError } from './classify.js';
import { createBucketClient } from './client.js';
import { testConnection } from './connection-test.js';
import { S3BucketWriter } from './writer.js';
import { localBucketOrigins } from '../../../test/helpers/tables.js';

const credentials = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };
const KEY_ARN = 'arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab';
const local = (encryption: BucketLocation['encryption']): BucketLocation => ({
  provider: 's3',
  bucket: 'local-exports',
  region: 'us-east-1',
  endpoint: process.env.SLUICE_LOCAL_S3_ENDPOINT as string,
  pathPrefix: `encryption/${randomUUID()}`,
  encryption,
});

/** Records, per command, the server-side encryption headers of the HTTP request as sent. */
function recordEncryptionHeaders(client: S3Client): { command: string; sse?: string; kmsKeyId?: string }[] {
  const sent: { command: string; sse?: string; kmsKeyId?: string }[] = [];
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const headers = (args.request as { headers: Record<string, string> }).headers;
      sent.push({
        command: context.commandName ?? '',
        ...(headers['x-amz-server-side-encryption'] !== undefined
          ? { sse: headers['x-amz-server-side-encryption'] }
          : {}),
        ...(headers['x-amz-server-side-encryption-aws-kms-key-id'] !== undefined
          ? { kmsKeyId: headers['x-amz-server-side-encryption-aws-kms-key-id'] }
          : {}),
      });
      return next(args);
    },
    { step: 'finalizeRequest', name: 'recordEncryptionHeaders' },
  );
  return sent;
}

describe('server-side encryption, against the local bucket', () => {
  it('sends aws:kms and the key on single-part and multipart uploads, on markers and on the connection test', async () => {
    // Prepare
    const location = local({ serverSideEncryption: 'aws:kms', kmsKeyId: KEY_ARN });
    const client = createBucketClient(location, credentials, { allowedEndpoints: localBucketOrigins });
    const sent = recordEncryptionHeaders(client);
    const writer = new S3BucketWriter({ location, client, partSize: 5 * 1024 * 1024 });
    const noisy = Array.from({ length: 9_000 }, () =>
      JSON.stringify({ id: randomBytes(900).toString('base64') }),
    );
    // Act
    await writer.writeFile(`${location.pathPrefix}/small.jsonl.gz`, ['{"id":1}']);
    await writer.writeFile(`${location.pathPrefix}/large.jsonl.gz`, noisy);
    await writer.writeMarker(`${location.pathPrefix}/_SUCCESS`, '{}');
    await testConnection(location, credentials, {
      now: new Date(),
      client,
      allowedEndpoints: localBucketOrigins,
    });
    client.destroy();
    // Assess: every object-creating request carries both headers; parts and completion carry none (S3 refuses them there)
    const kms = { sse: 'aws:kms', kmsKeyId: KEY_ARN };
    expect(sent.filter((r) => r.command === 'PutObjectCommand')).toEqual(
      Array.from({ length: 4 }, () => ({ command: 'PutObjectCommand', ...kms })),
    );
    expect(sent.filter((r) => r.command === 'CreateMultipartUploadCommand')).toEqual([
      { command: 'CreateMultipartUploadCommand', ...kms },
    ]);
    const parts = sent.filter(
      (r) => r.command === 'UploadPartCommand' || r.command === 'CompleteMultipartUploadCommand',
    );
    expect(parts.length).toBeGreaterThanOrEqual(3);
    expect(parts.every((r) => r.sse === undefined)).toBe(true);
  });

  it('sends AES256 without a key id, and nothing when no encryption is asked for', async () => {
    for (const [encryption, expected] of [
      [{ serverSideEncryption: 'AES256' }, { command: 'PutObjectCommand', sse: 'AES256' }],
      [null, { command: 'PutObjectCommand' }],
    ] as const) {
      const location = local(encryption);
      const client = createBucketClient(location, credentials, { allowedEndpoints: localBucketOrigins });
      const sent = recordEncryptionHeaders(client);
      await new S3BucketWriter({ location, client }).writeFile(`${location.pathPrefix}/a.jsonl.gz`, [
        '{"id":1}',
      ]);
      client.destroy();
      expect(sent).toEqual([expected]);
    }
  });
});

describe('a KMS key the credentials cannot use', () => {
  const client = new S3Client({ region: 'us-east-1', credentials });
  const s3 = mockClient(client);
  const location: BucketLocation = {
    provider: 's3',
    bucket: 'acme-exports',
    region: 'us-east-1',
    endpoint: null,
    pathPrefix: 'sluice',
    encryption: { serverSideEncryption: 'aws:kms', kmsKeyId: KEY_ARN },
  };
  const s3Error = (name: string, message: string, status: number) =>
    Object.assign(new Error(message), { name, $metadata: { httpStatusCode: status } });

  afterEach(() => {
    s3.reset();
  });

  it('fails the connection test at create with a message naming the key and the permissions', async () => {
    // Prepare
    s3.on(PutObjectCommand).rejects(s3Error('KMS.AccessDeniedException', 'not authorized', 403));
    // Act
    const error = await testConnection(location, credentials, { now: new Date(), client }).catch(
      (e: unknown) => e,
    );
    // Assess
    expect(error).toBeInstanceOf(ConnectionFailedError);
    expect((error as Error).message).toContain(`KMS key ${KEY_ARN}`);
    expect((error as Error).message).toContain('kms:GenerateDataKey');
    expect(error).toMatchObject({ retryable: false });
  });

  it.each([
    ['KMS.NotFoundException', 400, 'was not found'],
    ['KMS.DisabledException', 400, 'is disabled or pending deletion'],
    ['KMS.KMSInvalidStateException', 400, 'is disabled or pending deletion'],
    ['AccessDenied', 403, 'the credentials may not use'],
  ])('%s: a permanent access_denied naming the key (%s)', (name, status, text) => {
    const message = name === 'AccessDenied' ? 'User is not authorized to perform: kms:GenerateDataKey' : 'x';
    const classified = classifyBucketError(s3Error(name, message, status), location);
    expect(classified).toMatchObject({ kind: 'permanent', reason: 'access_denied' });
    expect(classified.message).toContain(text);
    expect(classified.message).toContain(KEY_ARN);
  });

  it('leaves an AccessDenied that is not about KMS, or a destination without aws:kms, as it was', () => {
    const plain = classifyBucketError(s3Error('AccessDenied', 'Access Denied', 403), location);
    expect(plain.message).not.toContain('KMS');
    const aes = classifyBucketError(s3Error('KMS.NotFoundException', 'x', 400), {
      ...location,
      encryption: { serverSideEncryption: 'AES256' },
    });
    expect(aes.message).not.toContain('KMS key');
  });
});
