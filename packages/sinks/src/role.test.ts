import { randomUUID } from 'node:crypto';
import { GetObjectCommand, HeadObjectCommand } from '@aws-sdk/client-s3';
import { AssumeRoleCommand, STSClient } from '@aws-sdk/client-sts';
import { type BucketLocation, ConnectionFailedError, roleSessionName } from '@sluice/core';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, describe, expect, it } from 'vitest';
import { classifyBucketError, toBucketError } from './classify.js';
import { createBucketClient } from './client.js';
import { testConnection } from './connection-test.js';
import { destinationCredentials, ROLE_UNAVAILABLE_MESSAGE, type RoleCredentials } from './role.js';
import { S3BucketWriter } from './writer.js';
import { localBucketOrigins } from '../../../test/helpers/tables.js';

const ROLE_ARN = 'arn:aws:iam::111122223333:role/sluice-writer';
const role: RoleCredentials = {
  roleArn: ROLE_ARN,
  externalId: 'sluice-0123456789abcdef0123456789abcdef',
  sessionName: roleSessionName('exp_0123456789abcdef01234567'),
};
/** What the mocked STS returns: the local bucket's own key, so s3rver accepts the signed requests. */
const TEMPORARY = {
  AccessKeyId: 'S3RVER',
  SecretAccessKey: 'S3RVER',
  SessionToken: 'session-token-from-sts',
  Expiration: new Date(Date.now() + 3_600_000),
};
const local = (): BucketLocation => ({
  provider: 's3',
  bucket: 'local-exports',
  region: 'eu-west-1',
  endpoint: process.env.SLUICE_LOCAL_S3_ENDPOINT as string,
  pathPrefix: `role/${randomUUID()}`,
});
const stsError = (name: string, message: string) =>
  Object.assign(new Error(message), { name, $metadata: { httpStatusCode: 403 } });

/** The local bucket's own key, to look at what was written. */
const LOCAL_KEY = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };

const sts = mockClient(STSClient);

afterEach(() => {
  sts.reset();
});

describe('a role destination, against the local bucket with the keys the (mocked) STS returns', () => {
  it('assumes the role once per client, with the external ID and session name, and writes the files', async () => {
    // Prepare
    sts.on(AssumeRoleCommand).resolves({ Credentials: TEMPORARY });
    const location = local();
    const client = createBucketClient(location, role, { allowedEndpoints: localBucketOrigins });
    const writer = new S3BucketWriter({ location, client });
    // Act: two files and a marker through one client
    await writer.writeFile(`${location.pathPrefix}/a.jsonl.gz`, ['{"id":1}']);
    await writer.writeFile(`${location.pathPrefix}/b.jsonl.gz`, ['{"id":2}', '{"id":3}']);
    await writer.writeMarker(`${location.pathPrefix}/_SUCCESS`, '{}');
    const marker = await client.send(
      new GetObjectCommand({ Bucket: location.bucket, Key: `${location.pathPrefix}/_SUCCESS` }),
    );
    client.destroy();
    // Assess: one AssumeRole, with exactly these parameters, in the bucket's region
    const calls = sts.commandCalls(AssumeRoleCommand);
    expect(calls).toHaveLength(1);
    expect(calls[0]?.args[0].input).toEqual({
      RoleArn: ROLE_ARN,
      ExternalId: role.externalId,
      RoleSessionName: 'sluice-exp_0123456789abcdef01234567',
      DurationSeconds: 3600,
    });
    expect(await calls[0]?.thisValue.config.region()).toBe('eu-west-1');
    expect(await marker.Body?.transformToString()).toBe('{}');
  });

  it('passes the connection test, signing with the session token', async () => {
    // Prepare: a trust policy that requires the external ID
    sts
      .on(AssumeRoleCommand)
      .rejects(stsError('AccessDenied', 'not authorized'))
      .on(AssumeRoleCommand, { ExternalId: role.externalId })
      .resolves({ Credentials: TEMPORARY });
    const location = local();
    const client = createBucketClient(location, role, { allowedEndpoints: localBucketOrigins });
    const tokens: (string | undefined)[] = [];
    client.middlewareStack.add(
      (next) => async (args) => {
        tokens.push((args.request as { headers: Record<string, string> }).headers['x-amz-security-token']);
        return next(args);
      },
      { step: 'finalizeRequest', name: 'recordSessionToken' },
    );
    // Act
    const result = await testConnection(location, role, {
      now: new Date(),
      client,
      allowedEndpoints: localBucketOrigins,
    });
    client.destroy();
    // Assess
    expect(result.key).toBe(`${location.pathPrefix}/_sluice/connection-test.json`);
    expect(tokens.length).toBeGreaterThanOrEqual(2);
    expect(new Set(tokens)).toEqual(new Set(['session-token-from-sts']));
    // First the probe with a random wrong external ID (refused), then the role's own.
    const externalIds = sts.commandCalls(AssumeRoleCommand).map((call) => call.args[0].input.ExternalId);
    expect(externalIds).toHaveLength(2);
    expect(externalIds[0]).toMatch(/^sluice-probe-[0-9a-f]{32}$/);
    expect(externalIds[1]).toBe(role.externalId);
  });
});

describe('a role whose trust policy admits Sluice without the external ID', () => {
  it('is refused by the connection test with the very message of a role that does not exist', async () => {
    // Prepare: the same location and role, once trusted without any condition, once unknown to STS
    const location = local();
    const test = async () =>
      (await testConnection(location, role, { now: new Date(), allowedEndpoints: localBucketOrigins }).catch(
        (e: unknown) => e,
      )) as ConnectionFailedError;
    sts.on(AssumeRoleCommand).resolves({ Credentials: TEMPORARY });
    // Act
    const trustedWithoutCondition = await test();
    sts.reset();
    sts.on(AssumeRoleCommand).rejects(stsError('AccessDenied', 'not authorized'));
    const missing = await test();
    // Assess
    expect(trustedWithoutCondition).toBeInstanceOf(ConnectionFailedError);
    expect(trustedWithoutCondition.retryable).toBe(false);
    expect(trustedWithoutCondition.message).toBe(missing.message);
    expect(missing.message).toBe(
      `Sluice could not use the role ${ROLE_ARN}. Check that the role exists and that its trust policy allows sts:AssumeRole to Sluice's principal only with the condition StringEquals sts:ExternalId "${role.externalId}" (see docs/deploy.md).`,
    );
    // Nothing was written with the keys of the probe.
    const reader = createBucketClient(location, LOCAL_KEY, { allowedEndpoints: localBucketOrigins });
    const written = await reader
      .send(
        new HeadObjectCommand({
          Bucket: location.bucket,
          Key: `${location.pathPrefix}/_sluice/connection-test.json`,
        }),
      )
      .catch((e: unknown) => (e as Error).name);
    reader.destroy();
    expect(written).toBe('NotFound');
  });
});

describe('a role Sluice cannot assume', () => {
  it('fails the connection test with a message naming the role and the external ID condition', async () => {
    // Prepare: what STS answers to a trust policy without Sluice, or with another external ID
    sts
      .on(AssumeRoleCommand)
      .rejects(
        stsError(
          'AccessDenied',
          `User: arn:aws:sts::999:assumed-role/x is not authorized to perform: sts:AssumeRole`,
        ),
      );
    const location = local();
    // Act
    const error = await testConnection(location, role, {
      now: new Date(),
      allowedEndpoints: localBucketOrigins,
    }).catch((e: unknown) => e);
    // Assess
    expect(error).toBeInstanceOf(ConnectionFailedError);
    const message = (error as Error).message;
    expect(message).toContain(ROLE_ARN);
    expect(message).toContain(`sts:ExternalId "${role.externalId}"`);
    expect(message).toContain('trust policy');
    expect((error as ConnectionFailedError).retryable).toBe(false);
  });

  it('fails a writer with the permanent BucketRoleNotAssumable, never the bucket access message', async () => {
    // Prepare
    sts.on(AssumeRoleCommand).rejects(stsError('AccessDenied', 'not authorized'));
    const location = local();
    const client = createBucketClient(location, role, { allowedEndpoints: localBucketOrigins });
    // Act
    const error = await new S3BucketWriter({ location, client })
      .writeFile(`${location.pathPrefix}/a.jsonl.gz`, ['{"id":1}'])
      .catch((e: unknown) => toBucketError(e, location));
    client.destroy();
    // Assess
    expect(error).toMatchObject({ name: 'BucketRoleNotAssumable', kind: 'permanent' });
    expect((error as Error).message).toContain(ROLE_ARN);
  });

  it('calls a throttled or failing STS transient, to be retried', async () => {
    sts.on(AssumeRoleCommand).rejects(stsError('Throttling', 'Rate exceeded'));
    const location = local();
    const client = createBucketClient(location, role, {
      allowedEndpoints: localBucketOrigins,
      maxAttempts: 1,
    });
    const error = await new S3BucketWriter({ location, client })
      .writeFile(`${location.pathPrefix}/a.jsonl.gz`, ['{"id":1}'])
      .catch((e: unknown) => e);
    client.destroy();
    expect(classifyBucketError(error, location)).toMatchObject({ kind: 'transient' });
    expect((error as Error).message).toContain('Sluice will retry');
  });

  it('says role destinations need AWS where there is no STS (the local runtime), without calling it', async () => {
    const location = local();
    const error = await testConnection(location, role, {
      now: new Date(),
      allowedEndpoints: localBucketOrigins,
      assumeRoles: false,
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConnectionFailedError);
    expect((error as Error).message).toBe(ROLE_UNAVAILABLE_MESSAGE);
    expect(sts.commandCalls(AssumeRoleCommand)).toHaveLength(0);
  });
});

describe('destinationCredentials', () => {
  it('names the role with the session name of the destination, and opens no secret', async () => {
    const opened: unknown[] = [];
    const credentials = await destinationCredentials(
      { id: 'exp_1', role: { roleArn: ROLE_ARN, externalId: 'sluice-x' } },
      async (sealed) => {
        opened.push(sealed);
        return 'never';
      },
    );
    expect(credentials).toEqual({ roleArn: ROLE_ARN, externalId: 'sluice-x', sessionName: 'sluice-exp_1' });
    expect(opened).toEqual([]);
  });

  it('opens the secret of a key destination', async () => {
    const secret = { encryptedDataKey: 'k', iv: 'i', ciphertext: 'c', tag: 't' };
    const credentials = await destinationCredentials(
      { id: 'exp_1', accessKeyId: 'AKIAEXAMPLE', secret },
      async (sealed) => (sealed === secret ? 'opened-secret' : 'wrong'),
    );
    expect(credentials).toEqual({ accessKeyId: 'AKIAEXAMPLE', secretAccessKey: 'opened-secret' });
  });
});
