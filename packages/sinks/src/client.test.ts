import { PutObjectCommand } from '@aws-sdk/client-s3';
import { type BucketLocation, InvalidInputError } from '@sluice/core';
import { describe, expect, it } from 'vitest';
import { classifyBucketError } from './classify.js';
import { bucketClientConfig, createBucketClient, GCS_ENDPOINT, resolveBucketEndpoint } from './client.js';
import type { Resolver } from './endpoint.js';

const credentials = {
  accessKeyId: 'AKIAIOSFODNN7EXAMPLE',
  secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
};
const none = { allowedEndpoints: new Set<string>() };
const aws: BucketLocation = {
  provider: 's3',
  bucket: 'acme-exports',
  region: 'eu-west-1',
  endpoint: null,
  pathPrefix: '',
};
const gcs: BucketLocation = { ...aws, provider: 'gcs', region: 'auto' };
const r2: BucketLocation = { ...aws, region: 'auto', endpoint: 'https://abc.r2.cloudflarestorage.com/' };

describe('bucketClientConfig', () => {
  it('AWS S3: the regional endpoint of the SDK, default checksums and addressing', () => {
    const config = bucketClientConfig(aws, credentials, none);
    expect(config.region).toBe('eu-west-1');
    expect(config.endpoint).toBeUndefined();
    expect(config.forcePathStyle).toBeUndefined();
    expect(config.requestChecksumCalculation).toBeUndefined();
    expect(config.followRegionRedirects).toBe(false);
    expect(config.maxAttempts).toBe(3);
  });

  it('GCS: storage.googleapis.com, region auto, path-style, checksums when required', () => {
    const config = bucketClientConfig(gcs, credentials, none);
    expect(config).toMatchObject({
      endpoint: GCS_ENDPOINT,
      region: 'auto',
      forcePathStyle: true,
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });
  });

  it('S3-compatible: the normalized endpoint, region auto unless named', () => {
    expect(bucketClientConfig(r2, credentials, none)).toMatchObject({
      endpoint: 'https://abc.r2.cloudflarestorage.com',
      region: 'auto',
      forcePathStyle: true,
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });
    expect(bucketClientConfig({ ...r2, region: 'weur' }, credentials, none).region).toBe('weur');
    expect(bucketClientConfig({ ...r2, region: '' }, credentials, none).region).toBe('auto');
  });

  it('refuses an unsafe endpoint, an endpoint with gcs, and AWS S3 without a region', () => {
    expect(() => bucketClientConfig({ ...r2, endpoint: 'https://10.0.0.1' }, credentials, none)).toThrow(
      InvalidInputError,
    );
    expect(() => bucketClientConfig({ ...r2, endpoint: 'http://s3.example.com' }, credentials, none)).toThrow(
      InvalidInputError,
    );
    expect(() =>
      bucketClientConfig({ ...gcs, endpoint: 'https://s3.example.com' }, credentials, none),
    ).toThrow('not allowed with gcs');
    expect(() => bucketClientConfig({ ...aws, region: 'auto' }, credentials, none)).toThrow(
      'Region is required',
    );
  });

  it('marks only an allow-listed origin as exempt', () => {
    const allowedEndpoints = new Set(['http://127.0.0.1:4569']);
    const local = { ...r2, endpoint: 'http://127.0.0.1:4569' };
    expect(resolveBucketEndpoint(local, { allowedEndpoints })).toEqual({
      endpoint: 'http://127.0.0.1:4569',
      region: 'auto',
      custom: true,
      allowListed: true,
    });
    expect(resolveBucketEndpoint(r2, { allowedEndpoints }).allowListed).toBe(false);
    expect(
      resolveBucketEndpoint(gcs, { allowedEndpoints, endpointOverride: 'http://127.0.0.1:4569' }),
    ).toMatchObject({
      endpoint: 'http://127.0.0.1:4569',
      region: 'auto',
      custom: true,
    });
  });

  it('does not carry the secret anywhere but the credentials', () => {
    const config = bucketClientConfig(r2, credentials, none);
    const { credentials: held, ...rest } = config;
    expect(held).toEqual(credentials);
    expect(
      JSON.stringify(rest, (_key, value) => (typeof value === 'bigint' ? String(value) : value)),
    ).not.toContain(credentials.secretAccessKey);
  });
});

describe('createBucketClient connects only to public addresses', () => {
  // A resolver that answers every name with loopback, as a rebinding DNS server would.
  const toLoopback: Resolver = async () => [{ address: '127.0.0.1', family: 4 }];

  it.each([
    ['an S3-compatible endpoint', r2],
    ['AWS S3', aws],
    ['GCS', gcs],
  ])('%s: the pinned lookup refuses at connect time', async (_label, location) => {
    const client = createBucketClient(location, credentials, {
      ...none,
      resolve: toLoopback,
      maxAttempts: 1,
    });
    const error = await client
      .send(new PutObjectCommand({ Bucket: location.bucket, Key: 'x', Body: 'x' }))
      .catch((caught: unknown) => caught);
    client.destroy();
    expect((error as { code?: string }).code).toBe('EUNSAFEADDRESS');
    expect(classifyBucketError(error, location).reason).toBe('unsafe_endpoint');
  });
});
