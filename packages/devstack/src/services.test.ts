import {
  DynamoDBClient,
  ListTablesCommand,
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
} from '@aws-sdk/client-dynamodb';
import {
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  paginateListObjectsV2,
} from '@aws-sdk/client-s3';
import { DecryptCommand, GenerateDataKeyCommand, KMSClient } from '@aws-sdk/client-kms';
import { inject, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';

describe('local services of the global setup', () => {
  it('are visible to the worker through process.env', () => {
    // Prepare
    const provided = inject('localEnv');
    // Assess
    for (const [name, value] of Object.entries(provided)) expect(process.env[name]).toBe(value);
    expect(process.env.AWS_ENDPOINT_URL_DYNAMODB).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  });

  it('DynamoDB Local holds the three tables, TTL on where the spec asks', async () => {
    // Prepare: the SDK picks the endpoint from AWS_ENDPOINT_URL_DYNAMODB
    const client = new DynamoDBClient({});
    // Act
    const { TableNames } = await client.send(new ListTablesCommand({}));
    const control = await client.send(
      new DescribeTableCommand({ TableName: process.env.SLUICE_CONTROL_TABLE }),
    );
    const ttl = await client.send(
      new DescribeTimeToLiveCommand({ TableName: process.env.SLUICE_CONTROL_TABLE }),
    );
    const subscribersTtl = await client.send(
      new DescribeTimeToLiveCommand({ TableName: process.env.SLUICE_SUBSCRIBERS_TABLE }),
    );
    // Assess
    expect(TableNames).toEqual(
      expect.arrayContaining([
        process.env.SLUICE_CONTROL_TABLE,
        process.env.SLUICE_EVENTS_TABLE,
        process.env.SLUICE_SUBSCRIBERS_TABLE,
      ]),
    );
    expect(control.Table?.BillingModeSummary?.BillingMode).toBe('PAY_PER_REQUEST');
    expect(control.Table?.GlobalSecondaryIndexes?.[0]).toMatchObject({
      IndexName: 'due',
      Projection: { ProjectionType: 'ALL' },
    });
    expect(ttl.TimeToLiveDescription).toMatchObject({
      AttributeName: 'expiresAt',
      TimeToLiveStatus: 'ENABLED',
    });
    expect(subscribersTtl.TimeToLiveDescription?.TimeToLiveStatus).toBe('DISABLED');
  });

  it('s3rver stores objects and pages a listing', async () => {
    // Prepare
    const s3 = new S3Client({
      endpoint: process.env.SLUICE_LOCAL_S3_ENDPOINT,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });
    const prefix = `services-test/${randomUUID()}/`;
    const keys = Array.from({ length: 5 }, (_, i) => `${prefix}object-${i}.txt`);
    // Act
    for (const key of keys) {
      await s3.send(new PutObjectCommand({ Bucket: 'local-exports', Key: key, Body: `body of ${key}` }));
    }
    const got = await s3.send(new GetObjectCommand({ Bucket: 'local-exports', Key: keys[3] }));
    const listed: string[] = [];
    let pages = 0;
    for await (const page of paginateListObjectsV2(
      { client: s3, pageSize: 2 },
      { Bucket: 'local-exports', Prefix: prefix },
    )) {
      pages += 1;
      for (const object of page.Contents ?? []) listed.push(object.Key ?? '');
    }
    const first = await s3.send(
      new ListObjectsV2Command({ Bucket: 'local-exports', Prefix: prefix, MaxKeys: 2 }),
    );
    // Assess
    expect(await got.Body?.transformToString()).toBe(`body of ${keys[3]}`);
    expect(listed).toEqual(keys);
    expect(pages).toBe(3);
    expect(first.IsTruncated).toBe(true);
  });

  it('the local KMS seals a data key under an encryption context', async () => {
    // Prepare: the SDK picks the endpoint from AWS_ENDPOINT_URL_KMS
    const kms = new KMSClient({});
    const context = { workspaceId: 'ws_test', destinationId: 'dest_1' };
    // Act
    const key = await kms.send(
      new GenerateDataKeyCommand({
        KeyId: process.env.SLUICE_KMS_KEY_ID,
        KeySpec: 'AES_256',
        EncryptionContext: context,
      }),
    );
    const opened = await kms.send(
      new DecryptCommand({ CiphertextBlob: key.CiphertextBlob, EncryptionContext: context }),
    );
    // Assess
    expect(key.Plaintext).toHaveLength(32);
    expect(Buffer.from(opened.Plaintext ?? []).equals(Buffer.from(key.Plaintext ?? []))).toBe(true);
  });
});
