import { randomUUID } from 'node:crypto';
import {
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  paginateListObjectsV2,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { Hash } from '@smithy/core/serde';
import { HttpRequest } from '@smithy/core/transport';
import { SignatureV4 } from '@smithy/signature-v4';
import { afterAll, describe, expect, it } from 'vitest';
import { LOCAL_BUCKET, LOCAL_REGION, LOCAL_S3_CREDENTIALS } from './s3-local.js';
import { s3ErrorXml } from './s3-signature.js';

// The global setup's bucket: the one every test of the suite writes to.
const endpoint = process.env.SLUICE_LOCAL_S3_ENDPOINT as string;
const prefix = `s3-local-test/${randomUUID()}/`;

function client(credentials: { accessKeyId: string; secretAccessKey: string }): S3Client {
  return new S3Client({
    endpoint,
    region: LOCAL_REGION,
    forcePathStyle: true,
    credentials,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    maxAttempts: 1,
  });
}

const good = client(LOCAL_S3_CREDENTIALS);
const wrongSecret = client({ ...LOCAL_S3_CREDENTIALS, secretAccessKey: 'not-the-secret' });
const unknownKey = client({ accessKeyId: 'AKIANOTKNOWN00000000', secretAccessKey: 'whatever' });

afterAll(() => {
  for (const s3 of [good, wrongSecret, unknownKey]) s3.destroy();
});

async function failure(send: () => Promise<unknown>): Promise<{ name?: string; status?: number }> {
  try {
    await send();
  } catch (error) {
    const shape = error as { name?: string; $metadata?: { httpStatusCode?: number } };
    return { name: shape.name, status: shape.$metadata?.httpStatusCode };
  }
  throw new Error('expected the request to fail');
}

/** A URL presigned as `@aws-sdk/s3-request-presigner` does it (payload unsigned, x-amz-* hoisted). */
async function presignedGet(key: string, secretAccessKey: string): Promise<URL> {
  const url = new URL(endpoint);
  const signer = new SignatureV4({
    service: 's3',
    region: LOCAL_REGION,
    credentials: { ...LOCAL_S3_CREDENTIALS, secretAccessKey },
    sha256: Hash.bind(null, 'sha256'),
    uriEscapePath: false,
  });
  const request = new HttpRequest({
    method: 'GET',
    protocol: url.protocol,
    hostname: url.hostname,
    port: Number(url.port),
    path: `/${LOCAL_BUCKET}/${key.split('/').map(encodeURIComponent).join('/')}`,
    headers: { host: url.host, 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD' },
  });
  const signed = await signer.presign(request, { expiresIn: 300 });
  const query = new URLSearchParams(signed.query as Record<string, string>).toString().replace(/\+/g, '%20');
  return new URL(`${signed.path}?${query}`, endpoint);
}

describe('the local bucket checks Signature V4', () => {
  it('serves the SDK signed with the right secret: keys and prefixes with reserved characters, paging, batch delete, multipart', async () => {
    // Prepare
    const keys = ['date=2024-01-01/a b(1)!*.json', "date=2024-01-01/it's+one~.json", 'x/ü.json'].map(
      (key) => `${prefix}${key}`,
    );
    // Act
    for (const key of keys) {
      await good.send(new PutObjectCommand({ Bucket: LOCAL_BUCKET, Key: key, Body: key }));
    }
    const listed: string[] = [];
    for await (const page of paginateListObjectsV2(
      { client: good, pageSize: 1 },
      { Bucket: LOCAL_BUCKET, Prefix: `${prefix}date=2024-01-01/` },
    )) {
      listed.push(...(page.Contents ?? []).map((object) => object.Key ?? ''));
    }
    const got = await good.send(new GetObjectCommand({ Bucket: LOCAL_BUCKET, Key: keys[0] }));
    await new Upload({
      client: good,
      params: { Bucket: LOCAL_BUCKET, Key: `${prefix}big.bin`, Body: Buffer.alloc(6 * 1024 * 1024, 7) },
      partSize: 5 * 1024 * 1024,
    }).done();
    const big = await good.send(new HeadObjectCommand({ Bucket: LOCAL_BUCKET, Key: `${prefix}big.bin` }));
    // A batch delete carries the checksum it requires; one key a folder (s3rver races removing a folder
    // emptied by two deletes at once).
    const deleted = await good.send(
      new DeleteObjectsCommand({
        Bucket: LOCAL_BUCKET,
        Delete: {
          Objects: [keys[0] as string, keys[2] as string, `${prefix}big.bin`].map((Key) => ({ Key })),
        },
      }),
    );
    // Assess
    expect(listed.sort()).toEqual(keys.slice(0, 2).sort());
    expect(await got.Body?.transformToString()).toBe(keys[0]);
    expect(big.ContentLength).toBe(6 * 1024 * 1024);
    expect(deleted.Errors ?? []).toEqual([]);
    expect(deleted.Deleted).toHaveLength(3);
  });

  it('refuses the right key id with a wrong secret as S3 does, and stores nothing', async () => {
    // Prepare
    const key = `${prefix}refused.json`;
    // Act
    const put = await failure(() =>
      wrongSecret.send(new PutObjectCommand({ Bucket: LOCAL_BUCKET, Key: key, Body: '{}' })),
    );
    const list = await failure(() =>
      wrongSecret.send(new ListObjectsV2Command({ Bucket: LOCAL_BUCKET, Prefix: prefix })),
    );
    const head = await failure(() =>
      wrongSecret.send(new HeadObjectCommand({ Bucket: LOCAL_BUCKET, Key: key })),
    );
    const stored = await failure(() => good.send(new HeadObjectCommand({ Bucket: LOCAL_BUCKET, Key: key })));
    // Assess
    expect(put).toEqual({ name: 'SignatureDoesNotMatch', status: 403 });
    expect(list).toEqual({ name: 'SignatureDoesNotMatch', status: 403 });
    // A HEAD answer has no body, so the SDK only sees the status, as with S3.
    expect(head.status).toBe(403);
    expect(stored).toEqual({ name: 'NotFound', status: 404 });
  });

  it('still refuses an unknown key id with InvalidAccessKeyId', async () => {
    // Act
    const put = await failure(() =>
      unknownKey.send(
        new PutObjectCommand({ Bucket: LOCAL_BUCKET, Key: `${prefix}unknown.json`, Body: '{}' }),
      ),
    );
    // Assess
    expect(put).toEqual({ name: 'InvalidAccessKeyId', status: 403 });
  });

  it('refuses a correctly signed request whose path was changed on the way', async () => {
    // Prepare: a GET signed for one key, sent for another
    const url = new URL(endpoint);
    const signer = new SignatureV4({
      service: 's3',
      region: LOCAL_REGION,
      credentials: LOCAL_S3_CREDENTIALS,
      sha256: Hash.bind(null, 'sha256'),
      uriEscapePath: false,
    });
    const signed = await signer.sign(
      new HttpRequest({
        method: 'GET',
        hostname: url.hostname,
        port: Number(url.port),
        path: `/${LOCAL_BUCKET}/${prefix}one.json`,
        headers: { host: url.host, 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD' },
      }),
    );
    const headers = signed.headers as Record<string, string>;
    // Act
    const asSigned = await fetch(new URL(signed.path, endpoint), { headers });
    const changed = await fetch(new URL(`/${LOCAL_BUCKET}/${prefix}two.json`, endpoint), { headers });
    // Assess
    expect(asSigned.status).toBe(404);
    expect(changed.status).toBe(403);
    expect(await changed.text()).toContain('<Code>SignatureDoesNotMatch</Code>');
  });

  it('checks presigned URLs too', async () => {
    // Prepare
    const key = `${prefix}presigned dir/file (1).txt`;
    await good.send(new PutObjectCommand({ Bucket: LOCAL_BUCKET, Key: key, Body: 'presigned body' }));
    const right = await presignedGet(key, LOCAL_S3_CREDENTIALS.secretAccessKey);
    const wrong = await presignedGet(key, 'not-the-secret');
    const tampered = new URL(right);
    tampered.searchParams.set('X-Amz-Expires', '600');
    // Act
    const ok = await fetch(right);
    const refused = await fetch(wrong);
    const refusedTampered = await fetch(tampered);
    // Assess
    expect(ok.status).toBe(200);
    expect(await ok.text()).toBe('presigned body');
    expect(refused.status).toBe(403);
    expect(await refused.text()).toContain('<Code>SignatureDoesNotMatch</Code>');
    expect(refusedTampered.status).toBe(403);
  });
});

describe('s3ErrorXml', () => {
  it('writes the S3 error document with its text escaped', () => {
    // Act
    const xml = s3ErrorXml(
      {
        status: 403,
        code: 'SignatureDoesNotMatch',
        message: 'a < b & "c"',
        detail: { AWSAccessKeyId: "<k'>" },
      },
      'REQ1',
    );
    // Assess
    expect(xml).toBe(
      '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SignatureDoesNotMatch</Code>' +
        '<Message>a &lt; b &amp; &quot;c&quot;</Message><AWSAccessKeyId>&lt;k&apos;&gt;</AWSAccessKeyId>' +
        '<RequestId>REQ1</RequestId></Error>',
    );
  });
});
