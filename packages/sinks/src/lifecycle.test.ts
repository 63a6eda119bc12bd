import {
  GetBucketLifecycleConfigurationCommand,
  type LifecycleRule,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import type { BucketLocation } from '@sluice/core';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, describe, expect, it } from 'vitest';
import { testConnection } from './connection-test.js';
import {
  checkAbortIncompleteUploadsRule,
  coversIncompleteUploads,
  LIFECYCLE_PERMISSION,
} from './lifecycle.js';

const location: BucketLocation = {
  provider: 's3',
  bucket: 'acme-exports',
  region: 'us-east-1',
  endpoint: null,
  pathPrefix: 'sluice/acme',
};
const credentials = { accessKeyId: 'AKIAEXAMPLE', secretAccessKey: 'secret' };
const client = new S3Client({ region: 'us-east-1', credentials });
const s3 = mockClient(client);

const abortAfterOneDay = (filter: LifecycleRule['Filter'], status: 'Enabled' | 'Disabled' = 'Enabled') => ({
  ID: 'abort',
  Status: status,
  Filter: filter,
  AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 },
});

afterEach(() => {
  s3.reset();
});

describe('the lifecycle check of the connection test', () => {
  it('warns nothing when an enabled rule aborts incomplete uploads under the path', async () => {
    // Prepare
    s3.on(PutObjectCommand).resolves({});
    s3.on(GetBucketLifecycleConfigurationCommand).resolves({
      Rules: [abortAfterOneDay({ Prefix: 'sluice/' })],
    });
    // Act
    const result = await testConnection(location, credentials, { now: new Date(), client });
    // Assess
    expect(result.warnings).toEqual([]);
    expect(s3.commandCalls(GetBucketLifecycleConfigurationCommand)[0]?.args[0].input).toEqual({
      Bucket: 'acme-exports',
    });
  });

  it('warns, with the rule to add, when no rule aborts incomplete uploads (create still succeeds)', async () => {
    s3.on(PutObjectCommand).resolves({});
    s3.on(GetBucketLifecycleConfigurationCommand).resolves({
      Rules: [{ ID: 'expire', Status: 'Enabled', Filter: {}, Expiration: { Days: 30 } }],
    });
    const result = await testConnection(location, credentials, { now: new Date(), client });
    expect(result.warnings).toEqual([
      { code: 'no_abort_incomplete_multipart_rule', message: expect.stringContaining('Add a rule such as') },
    ]);
    expect(result.warnings[0]?.message).toContain('"Filter":{"Prefix":"sluice/acme/"}');
    expect(result.warnings[0]?.message).not.toContain(LIFECYCLE_PERMISSION);
  });

  it('warns without the permission hint when the bucket has no lifecycle configuration at all', async () => {
    s3.on(GetBucketLifecycleConfigurationCommand).rejects(
      Object.assign(new Error('The lifecycle configuration does not exist'), {
        name: 'NoSuchLifecycleConfiguration',
      }),
    );
    const warnings = await checkAbortIncompleteUploadsRule(client, location);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]?.message).not.toContain(LIFECYCLE_PERMISSION);
  });

  it('warns with the permission to grant when the configuration cannot be read', async () => {
    s3.on(GetBucketLifecycleConfigurationCommand).rejects(
      Object.assign(new Error('Access Denied'), { name: 'AccessDenied', $metadata: { httpStatusCode: 403 } }),
    );
    const warnings = await checkAbortIncompleteUploadsRule(client, location);
    expect(warnings).toEqual([
      { code: 'no_abort_incomplete_multipart_rule', message: expect.stringContaining(LIFECYCLE_PERMISSION) },
    ]);
  });

  it('counts only enabled rules whose filter covers every key under the path', () => {
    expect(coversIncompleteUploads([abortAfterOneDay({})], 'sluice/acme')).toBe(true);
    expect(coversIncompleteUploads([abortAfterOneDay({ Prefix: '' })], '')).toBe(true);
    expect(coversIncompleteUploads([abortAfterOneDay({ Prefix: 'sluice/acme/' })], 'sluice/acme')).toBe(true);
    expect(coversIncompleteUploads([abortAfterOneDay({ Prefix: 'other/' })], 'sluice/acme')).toBe(false);
    expect(coversIncompleteUploads([abortAfterOneDay({ Prefix: 'sluice/acme/' })], '')).toBe(false);
    expect(coversIncompleteUploads([abortAfterOneDay({}, 'Disabled')], 'sluice/acme')).toBe(false);
    expect(
      coversIncompleteUploads([abortAfterOneDay({ Tag: { Key: 'k', Value: 'v' } })], 'sluice/acme'),
    ).toBe(false);
    expect(
      coversIncompleteUploads(
        [
          {
            ID: 'legacy',
            Status: 'Enabled',
            Prefix: 'sluice/',
            AbortIncompleteMultipartUpload: { DaysAfterInitiation: 7 },
          },
        ],
        'sluice/acme',
      ),
    ).toBe(true);
  });
});
