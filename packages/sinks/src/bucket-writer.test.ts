import {
  GetObjectCommand,
  ListMultipartUploadsCommand,
  NoSuchKey,
  type S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import type { BucketLocation } from '@sluice/core';
import { describe, expect, it } from 'vitest';
import { type BucketWriterFixture, bucketWriterContract } from './bucket-writer.contract.js';
import { type BucketClientOptions, createBucketClient } from './client.js';
import { S3BucketWriter } from './writer.js';
import { localBucketOrigins } from '../../../test/helpers/tables.js';

const endpoint = process.env.SLUICE_LOCAL_S3_ENDPOINT as string;
const credentials = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };

/** Records which commands the client sent, for which key, whatever their outcome. */
function recordCommands(client: S3Client): { command: string; key: unknown }[] {
  const sent: { command: string; key: unknown }[] = [];
  client.middlewareStack.add(
    (next, context) => async (args) => {
      sent.push({ command: context.commandName ?? '', key: (args.input as { Key?: unknown }).Key });
      return next(args);
    },
    { step: 'initialize', name: 'recordCommands' },
  );
  return sent;
}

function s3Fixture(location: BucketLocation, given: BucketClientOptions = {}) {
  // The local s3rver is allow-listed, as the local runtime does.
  const options = { ...given, allowedEndpoints: localBucketOrigins };
  return async ({ partSize }: { partSize: number }): Promise<BucketWriterFixture> => {
    const client = createBucketClient(location, credentials, options);
    const sent = recordCommands(client);
    // Reads the files back: more than the 1 MiB a bucket client reads of an answer.
    const reader = createBucketClient(location, credentials, {
      ...options,
      maxResponseBytes: 64 * 1024 * 1024,
    });
    return {
      writer: new S3BucketWriter({ location, client, partSize }),
      async read(key) {
        try {
          const object = await reader.send(new GetObjectCommand({ Bucket: location.bucket, Key: key }));
          return Buffer.from(
            await (object.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray(),
          );
        } catch (error) {
          if (error instanceof NoSuchKey) return undefined;
          throw error;
        }
      },
      async pendingUploads(key) {
        try {
          const listed = await client.send(
            new ListMultipartUploadsCommand({ Bucket: location.bucket, Prefix: key }),
          );
          return (listed.Uploads ?? []).length;
        } catch (error) {
          if (error instanceof S3ServiceException && error.name === 'NotImplemented') return undefined;
          throw error;
        }
      },
      abortsRequested(key) {
        return sent.filter((entry) => entry.command === 'AbortMultipartUploadCommand' && entry.key === key)
          .length;
      },
      missingBucketWriter() {
        const missing = { ...location, bucket: 'no-such-bucket-for-contract' };
        return new S3BucketWriter({
          location: missing,
          client: createBucketClient(missing, credentials, options),
        });
      },
    };
  };
}

// AWS-S3-compatible path: an S3 destination with a custom endpoint, the allow-listed local s3rver.
bucketWriterContract(
  'S3-compatible endpoint (s3rver, allow-listed)',
  s3Fixture({ provider: 's3', bucket: 'local-exports', region: 'us-east-1', endpoint, pathPrefix: '' }),
);

// GCS-style client (region auto, path-style, WHEN_REQUIRED checksums) pointed at s3rver.
bucketWriterContract(
  'GCS-style client (pointed at s3rver)',
  s3Fixture(
    { provider: 'gcs', bucket: 'local-exports', region: 'auto', endpoint: null, pathPrefix: '' },
    { endpointOverride: endpoint },
  ),
);

describe('the GCS-style fixture', () => {
  it('is configured as a GCS client: region auto, path-style, checksums only when required', async () => {
    const client = createBucketClient(
      { provider: 'gcs', bucket: 'local-exports', region: 'auto', endpoint: null, pathPrefix: '' },
      credentials,
      { endpointOverride: endpoint, allowedEndpoints: localBucketOrigins },
    );

    expect(await client.config.region()).toBe('auto');
    expect(client.config.forcePathStyle).toBe(true);
    expect(await client.config.requestChecksumCalculation()).toBe('WHEN_REQUIRED');
    expect(await client.config.responseChecksumValidation()).toBe('WHEN_REQUIRED');
    client.destroy();
  });
});
