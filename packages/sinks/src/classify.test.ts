import { createServer, type Server } from 'node:http';
import {
  AccessDenied,
  NoSuchBucket,
  NotFound,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import type { BucketLocation } from '@sluice/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BUCKET_ERROR_NAMES,
  BucketError,
  classifyBucketError,
  PERMANENT_BUCKET_ERROR_NAMES,
  regionFromError,
  TRANSIENT_BUCKET_ERROR_NAMES,
  toBucketError,
} from './classify.js';
import { bucketClientConfig } from './client.js';
import { UnsafeAddressError } from './lookup.js';
import { localBucketOrigins } from '../../../test/helpers/tables.js';

const aws: BucketLocation = {
  provider: 's3',
  bucket: 'acme-exports',
  region: 'us-east-1',
  endpoint: null,
  pathPrefix: 'sluice',
};
const r2: BucketLocation = { ...aws, region: 'auto', endpoint: 'https://abc.r2.cloudflarestorage.com' };
const gcs: BucketLocation = { ...aws, provider: 'gcs', region: 'auto' };
const SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';

function serviceError(name: string, status: number, message: string, fields: Record<string, unknown> = {}) {
  return Object.assign(
    new S3ServiceException({
      name,
      $fault: status >= 500 ? 'server' : 'client',
      $metadata: { httpStatusCode: status },
      message,
    }),
    fields,
  );
}

function withResponse<T extends object>(error: T, statusCode: number, headers: Record<string, string>): T {
  Object.defineProperty(error, '$response', { value: { statusCode, headers }, enumerable: false });
  return error;
}

function errnoError(code: string, message = `${code} happened`): NodeJS.ErrnoException {
  return Object.assign(new Error(message), { code });
}

describe('classifyBucketError', () => {
  it('missing bucket (the SDK NoSuchBucket class)', () => {
    const error = new NoSuchBucket({
      message: 'The specified bucket does not exist',
      $metadata: { httpStatusCode: 404 },
    });
    expect(classifyBucketError(error, aws)).toEqual({
      kind: 'permanent',
      reason: 'no_such_bucket',
      message: 'Bucket "acme-exports" does not exist. Check the bucket name and the region (us-east-1).',
    });
    expect(classifyBucketError(error, r2).message).toContain('at https://abc.r2.cloudflarestorage.com');
  });

  it('access denied, in the words of the reference', () => {
    const error = new AccessDenied({ message: 'Access Denied', $metadata: { httpStatusCode: 403 } });
    expect(classifyBucketError(error, aws)).toEqual({
      kind: 'permanent',
      reason: 'access_denied',
      message:
        'Access denied writing to "acme-exports". Grant the key permission to put objects under the configured path.',
    });
    // A bare 403 without a code (some stores) is access denied too.
    expect(classifyBucketError(serviceError('403', 403, 'Forbidden'), gcs).reason).toBe('access_denied');
  });

  it('unknown access key', () => {
    const error = serviceError(
      'InvalidAccessKeyId',
      403,
      'The AWS Access Key Id you provided does not exist in our records.',
      {
        AWSAccessKeyId: 'AKIAIOSFODNN7EXAMPLE',
      },
    );
    const result = classifyBucketError(error, aws);
    expect(result.reason).toBe('invalid_access_key');
    expect(result.kind).toBe('permanent');
    expect(result.message).toContain('does not recognise the access key ID');
    expect(result.message).not.toContain('AKIAIOSFODNN7EXAMPLE');
  });

  it('wrong secret', () => {
    const error = serviceError(
      'SignatureDoesNotMatch',
      403,
      'The request signature we calculated does not match the signature you provided. Check your key and signing method.',
      { StringToSign: 'AWS4-HMAC-SHA256\n...', SignatureProvided: 'abc' },
    );
    const result = classifyBucketError(error, r2);
    expect(result).toMatchObject({ kind: 'permanent', reason: 'signature_mismatch' });
    expect(result.message).toContain('the secret access key is wrong');
    expect(result.message).toContain('The store at https://abc.r2.cloudflarestorage.com');
  });

  describe('wrong region, naming the right one when the provider says it', () => {
    it('from the x-amz-bucket-region header of a 301', () => {
      const error = withResponse(
        serviceError(
          'PermanentRedirect',
          301,
          'The bucket you are attempting to access must be addressed using the specified endpoint.',
        ),
        301,
        {
          'x-amz-bucket-region': 'eu-west-1',
        },
      );
      expect(classifyBucketError(error, aws)).toEqual({
        kind: 'permanent',
        reason: 'wrong_region',
        message: 'Bucket "acme-exports" is in region eu-west-1, not us-east-1. Set the region to eu-west-1.',
      });
    });

    it('from the Endpoint field of PermanentRedirect', () => {
      const error = serviceError('PermanentRedirect', 301, 'must be addressed using the specified endpoint', {
        Endpoint: 'acme-exports.s3.ap-southeast-2.amazonaws.com',
      });
      expect(classifyBucketError(error, aws).message).toContain('is in region ap-southeast-2');
    });

    it('from the Region field of AuthorizationHeaderMalformed', () => {
      const error = serviceError(
        'AuthorizationHeaderMalformed',
        400,
        "The authorization header is malformed; the region 'us-east-1' is wrong; expecting 'eu-central-1'",
        { Region: 'eu-central-1' },
      );
      expect(classifyBucketError(error, aws)).toMatchObject({ reason: 'wrong_region' });
      expect(classifyBucketError(error, aws).message).toContain('Set the region to eu-central-1');
    });

    it('from the message alone', () => {
      const error = serviceError(
        'AuthorizationHeaderMalformed',
        400,
        "The authorization header is malformed; the region 'us-east-1' is wrong; expecting 'us-west-2'",
      );
      expect(regionFromError(error)).toBe('us-west-2');
      expect(classifyBucketError(error, aws).message).toContain('is in region us-west-2');
    });

    it('from a BucketRegion field', () => {
      const error = serviceError('IllegalLocationConstraintException', 400, 'wrong location', {
        BucketRegion: 'sa-east-1',
      });
      expect(classifyBucketError(error, aws).message).toContain('is in region sa-east-1');
    });

    it('without a region named', () => {
      const error = serviceError('PermanentRedirect', 301, 'must be addressed using the specified endpoint');
      expect(classifyBucketError(error, aws)).toEqual({
        kind: 'permanent',
        reason: 'wrong_region',
        message:
          'Bucket "acme-exports" is not in region us-east-1. Set the region the bucket was created in.',
      });
    });
  });

  it('an unsafe address refused by the pinned lookup', () => {
    const result = classifyBucketError(new UnsafeAddressError('evil.example.com'), r2);
    expect(result).toMatchObject({ kind: 'permanent', reason: 'unsafe_endpoint' });
    expect(result.message).toContain('https://abc.r2.cloudflarestorage.com');
  });

  it('a redirect that is not about the region is an error, not followed', () => {
    const result = classifyBucketError(
      withResponse(serviceError('302', 302, 'Found'), 302, { location: 'https://elsewhere' }),
      r2,
    );
    expect(result).toMatchObject({ kind: 'permanent', reason: 'redirected' });
    expect(result.message).toContain('does not follow redirects');
  });

  it.each([
    ['ENOTFOUND', 'the host name does not resolve'],
    ['ECONNREFUSED', 'the connection was refused'],
    ['ECONNRESET', 'the connection was reset'],
    ['EHOSTUNREACH', 'the host is unreachable'],
  ])('an unreachable endpoint (%s) is transient', (code, words) => {
    const result = classifyBucketError(errnoError(code), r2);
    expect(result).toEqual({
      kind: 'transient',
      reason: 'endpoint_unreachable',
      message: `Could not reach https://abc.r2.cloudflarestorage.com: ${words}. Check the endpoint; Sluice will retry.`,
    });
  });

  it('a timeout from the SDK handler is unreachable and transient', () => {
    const error = Object.assign(new Error('the request socket did not establish a connection'), {
      name: 'TimeoutError',
    });
    expect(classifyBucketError(error, aws)).toMatchObject({
      kind: 'transient',
      reason: 'endpoint_unreachable',
    });
  });

  it('a socket error wrapped as a cause is still found', () => {
    const error = new Error('request failed', { cause: errnoError('ECONNREFUSED') });
    expect(classifyBucketError(error, r2).reason).toBe('endpoint_unreachable');
  });

  it('a bad certificate is permanent', () => {
    expect(classifyBucketError(errnoError('CERT_HAS_EXPIRED'), r2)).toMatchObject({
      kind: 'permanent',
      reason: 'tls_error',
    });
  });

  it.each([
    ['SlowDown', 503],
    ['Throttling', 400],
    ['TooManyRequests', 429],
  ])('throttling (%s) is transient', (name, status) => {
    expect(
      classifyBucketError(serviceError(name, status, 'Please reduce your request rate.'), aws),
    ).toMatchObject({
      kind: 'transient',
      reason: 'throttled',
    });
  });

  it('a bare 429 or 503 is throttling', () => {
    expect(classifyBucketError(serviceError('429', 429, 'Too Many Requests'), r2).reason).toBe('throttled');
    expect(classifyBucketError(serviceError('503', 503, 'Service Unavailable'), r2).reason).toBe('throttled');
  });

  it('5xx is a transient server error', () => {
    expect(
      classifyBucketError(serviceError('InternalError', 500, 'We encountered an internal error.'), aws),
    ).toMatchObject({
      kind: 'transient',
      reason: 'server_error',
    });
    expect(classifyBucketError(serviceError('502', 502, 'Bad Gateway'), r2)).toMatchObject({
      reason: 'server_error',
    });
  });

  it('a bare 404 (HEAD-style NotFound) is a missing bucket', () => {
    const error = new NotFound({ message: 'NotFound', $metadata: { httpStatusCode: 404 } });
    expect(classifyBucketError(error, gcs)).toMatchObject({ reason: 'no_such_bucket' });
    expect(classifyBucketError(error, gcs).message).toContain('in Google Cloud Storage');
  });

  it('anything else is unknown and transient, with the provider text scrubbed of key ids', () => {
    const error = serviceError('InvalidArgument', 400, 'Bad header for key AKIAIOSFODNN7EXAMPLE');
    const result = classifyBucketError(error, aws);
    expect(result).toMatchObject({ kind: 'transient', reason: 'unknown' });
    expect(result.message).toBe(
      'Writing to "acme-exports" failed (InvalidArgument, HTTP 400): Bad header for key AKIA…',
    );
    expect(classifyBucketError('a string', aws).reason).toBe('unknown');
    expect(classifyBucketError(undefined, aws).reason).toBe('unknown');
  });

  it('never puts the secret in a message, whatever the error carries', () => {
    const errors: unknown[] = [
      serviceError('SignatureDoesNotMatch', 403, 'mismatch', { secret: SECRET }),
      serviceError('InvalidAccessKeyId', 403, 'no such key'),
      errnoError('ECONNREFUSED'),
      new AccessDenied({ message: 'Access Denied', $metadata: { httpStatusCode: 403 } }),
    ];
    for (const error of errors) expect(classifyBucketError(error, aws).message).not.toContain(SECRET);
  });
});

describe('BucketError names for Step Functions', () => {
  it('lists the permanent names the Retry/Catch configuration needs', () => {
    expect(PERMANENT_BUCKET_ERROR_NAMES).toEqual(
      expect.arrayContaining([
        'BucketNotFound',
        'BucketAccessDenied',
        'BucketWrongRegion',
        'BucketInvalidAccessKey',
        'BucketSignatureMismatch',
        'BucketUnsafeEndpoint',
      ]),
    );
    expect(TRANSIENT_BUCKET_ERROR_NAMES).toEqual(
      expect.arrayContaining([
        'BucketUnreachable',
        'BucketThrottled',
        'BucketServerError',
        'BucketUnknownError',
      ]),
    );
  });

  it('splits every name into exactly one list', () => {
    const all = Object.values(BUCKET_ERROR_NAMES);
    expect([...PERMANENT_BUCKET_ERROR_NAMES, ...TRANSIENT_BUCKET_ERROR_NAMES].sort()).toEqual(
      [...all].sort(),
    );
    expect(
      PERMANENT_BUCKET_ERROR_NAMES.filter((name) => TRANSIENT_BUCKET_ERROR_NAMES.includes(name)),
    ).toEqual([]);
  });

  it('toBucketError sets name, kind and cause, and is idempotent', () => {
    const cause = new NoSuchBucket({ message: 'nope', $metadata: { httpStatusCode: 404 } });
    const error = toBucketError(cause, aws);
    expect(error).toBeInstanceOf(BucketError);
    expect(error.name).toBe('BucketNotFound');
    expect(error.kind).toBe('permanent');
    expect(error.retryable).toBe(false);
    expect(error.cause).toBe(cause);
    expect(toBucketError(error, r2)).toBe(error);
    expect(toBucketError(errnoError('ECONNREFUSED'), r2)).toMatchObject({
      name: 'BucketUnreachable',
      retryable: true,
    });
  });
});

describe('classification of real responses', () => {
  const endpoint = process.env.SLUICE_LOCAL_S3_ENDPOINT as string;
  const local: BucketLocation = {
    provider: 's3',
    bucket: 'local-exports',
    region: 'us-east-1',
    endpoint,
    pathPrefix: '',
  };
  const put = (
    location: BucketLocation,
    credentials = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
  ) =>
    new S3Client(
      bucketClientConfig(location, credentials, { maxAttempts: 1, allowedEndpoints: localBucketOrigins }),
    )
      .send(new PutObjectCommand({ Bucket: location.bucket, Key: 'x.txt', Body: 'x' }))
      .then(
        () => undefined,
        (error: unknown) => classifyBucketError(error, location),
      );

  it('s3rver: a missing bucket is no_such_bucket', async () => {
    const result = await put({ ...local, bucket: 'no-such-bucket-here' });
    expect(result).toMatchObject({ kind: 'permanent', reason: 'no_such_bucket' });
    expect(result?.message).toContain('Bucket "no-such-bucket-here" does not exist');
  });

  it('s3rver: an unknown key is invalid_access_key', async () => {
    // (s3rver does not verify SigV4 signatures, so a wrong secret is only covered by the unit case above.)
    const result = await put(local, { accessKeyId: 'NOSUCHKEY', secretAccessKey: 'S3RVER' });
    expect(result).toMatchObject({ kind: 'permanent', reason: 'invalid_access_key' });
  });

  describe('a store that answers with redirects', () => {
    let server: Server;
    let origin = '';
    let requests = 0;
    let respond: (res: import('node:http').ServerResponse) => void = () => undefined;

    beforeAll(async () => {
      server = createServer((req, res) => {
        requests += 1;
        req.resume();
        req.on('end', () => respond(res));
      });
      await new Promise<void>((ready) => server.listen(0, '127.0.0.1', ready));
      origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    });
    afterAll(async () => {
      server.closeAllConnections();
      await new Promise((closed) => server.close(closed));
    });

    const send = async () => {
      const location: BucketLocation = { ...local, endpoint: origin, bucket: 'acme-exports' };
      const client = new S3Client(
        bucketClientConfig(
          location,
          { accessKeyId: 'K', secretAccessKey: 'S' },
          { allowedEndpoints: new Set([origin]) },
        ),
      );
      try {
        await client.send(new PutObjectCommand({ Bucket: location.bucket, Key: 'x.txt', Body: 'x' }));
        return undefined;
      } catch (error) {
        return classifyBucketError(error, location);
      } finally {
        client.destroy();
      }
    };

    it('does not follow a 302 and calls it an error', async () => {
      requests = 0;
      respond = (res) => {
        res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' });
        res.end();
      };
      const result = await send();
      expect(result).toMatchObject({ kind: 'permanent', reason: 'redirected' });
      expect(requests).toBe(1);
    });

    it('reads the region from a real 301 PermanentRedirect', async () => {
      requests = 0;
      respond = (res) => {
        res.writeHead(301, { 'content-type': 'application/xml', 'x-amz-bucket-region': 'eu-west-3' });
        res.end(
          '<?xml version="1.0" encoding="UTF-8"?><Error><Code>PermanentRedirect</Code><Message>The bucket you are attempting to access must be addressed using the specified endpoint.</Message><Endpoint>acme-exports.s3.eu-west-3.amazonaws.com</Endpoint><Bucket>acme-exports</Bucket></Error>',
        );
      };
      const result = await send();
      expect(result).toMatchObject({ reason: 'wrong_region' });
      expect(result?.message).toContain('is in region eu-west-3');
      expect(requests).toBe(1);
    });
  });
});
