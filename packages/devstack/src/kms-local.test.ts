import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  DecryptCommand,
  DescribeKeyCommand,
  EncryptCommand,
  GenerateDataKeyCommand,
  InvalidCiphertextException,
  KMSClient,
  NotFoundException,
} from '@aws-sdk/client-kms';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type KmsLocal, startKmsLocal } from './kms-local.js';

function clientFor(kms: KmsLocal): KMSClient {
  return new KMSClient({
    endpoint: kms.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 1,
  });
}

describe('local KMS with @aws-sdk/client-kms', () => {
  let kms: KmsLocal;
  let client: KMSClient;
  const context = { workspaceId: 'ws_1', destinationId: 'dest_1' };

  beforeAll(async () => {
    kms = await startKmsLocal();
    client = clientFor(kms);
  });
  afterAll(async () => {
    client.destroy();
    await kms.stop();
  });

  it('GenerateDataKey then Decrypt returns the same 32-byte key', async () => {
    // Act
    const key = await client.send(
      new GenerateDataKeyCommand({ KeyId: kms.keyArn, KeySpec: 'AES_256', EncryptionContext: context }),
    );
    const opened = await client.send(
      new DecryptCommand({ CiphertextBlob: key.CiphertextBlob, EncryptionContext: context }),
    );
    // Assess
    expect(key.KeyId).toBe(kms.keyArn);
    expect(key.Plaintext).toHaveLength(32);
    expect(Buffer.from(key.CiphertextBlob ?? []).includes(Buffer.from(key.Plaintext ?? []))).toBe(false);
    expect(Buffer.from(opened.Plaintext ?? [])).toEqual(Buffer.from(key.Plaintext ?? []));
    expect(opened.KeyId).toBe(kms.keyArn);
  });

  it('GenerateDataKey honours NumberOfBytes and accepts the bare key id', async () => {
    // Act
    const key = await client.send(new GenerateDataKeyCommand({ KeyId: kms.keyId, NumberOfBytes: 64 }));
    // Assess
    expect(key.Plaintext).toHaveLength(64);
  });

  it('Encrypt then Decrypt round-trips, the context order does not matter', async () => {
    // Prepare
    const plaintext = Buffer.from('a destination secret');
    // Act
    const sealed = await client.send(
      new EncryptCommand({ KeyId: kms.keyId, Plaintext: plaintext, EncryptionContext: { b: '2', a: '1' } }),
    );
    const opened = await client.send(
      new DecryptCommand({ CiphertextBlob: sealed.CiphertextBlob, EncryptionContext: { a: '1', b: '2' } }),
    );
    // Assess
    expect(Buffer.from(opened.Plaintext ?? []).toString()).toBe('a destination secret');
  });

  it('Decrypt with another encryption context fails with InvalidCiphertextException', async () => {
    // Prepare
    const key = await client.send(
      new GenerateDataKeyCommand({ KeyId: kms.keyId, KeySpec: 'AES_256', EncryptionContext: context }),
    );
    // Act
    const attempts = [{ ...context, destinationId: 'dest_2' }, { workspaceId: 'ws_1' }, undefined].map(
      (other) =>
        client
          .send(new DecryptCommand({ CiphertextBlob: key.CiphertextBlob, EncryptionContext: other }))
          .then(
            () => 'decrypted',
            (error: unknown) => error,
          ),
    );
    // Assess
    for (const outcome of await Promise.all(attempts)) {
      expect(outcome).toBeInstanceOf(InvalidCiphertextException);
      expect((outcome as InvalidCiphertextException).$metadata.httpStatusCode).toBe(400);
    }
  });

  it('Decrypt of a tampered blob fails with InvalidCiphertextException', async () => {
    // Prepare
    const key = await client.send(
      new GenerateDataKeyCommand({ KeyId: kms.keyId, KeySpec: 'AES_256', EncryptionContext: context }),
    );
    const blob = Buffer.from(key.CiphertextBlob ?? []);
    const lastByte = Buffer.from(blob);
    lastByte[lastByte.length - 1] = (lastByte[lastByte.length - 1] ?? 0) ^ 0x01;
    const truncated = blob.subarray(0, 20);
    // Act + Assess
    for (const tampered of [lastByte, truncated, Buffer.from('not a blob at all')]) {
      await expect(
        client.send(new DecryptCommand({ CiphertextBlob: tampered, EncryptionContext: context })),
      ).rejects.toBeInstanceOf(InvalidCiphertextException);
    }
  });

  it('answers errors in the KMS JSON format', async () => {
    // Act
    const response = await fetch(kms.endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/x-amz-json-1.1', 'x-amz-target': 'TrentService.Decrypt' },
      body: JSON.stringify({ CiphertextBlob: Buffer.from('junk').toString('base64') }),
    });
    // Assess
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({
      __type: 'InvalidCiphertextException',
      message: expect.any(String),
    });
  });

  it('an unknown key is NotFoundException, DescribeKey describes the known one', async () => {
    // Act
    const unknown = await client
      .send(new GenerateDataKeyCommand({ KeyId: '00000000-0000-0000-0000-000000000000', KeySpec: 'AES_256' }))
      .catch((error: unknown) => error);
    const described = await client.send(new DescribeKeyCommand({ KeyId: kms.keyArn }));
    // Assess
    expect(unknown).toBeInstanceOf(NotFoundException);
    expect(described.KeyMetadata).toMatchObject({
      KeyId: kms.keyId,
      Arn: kms.keyArn,
      Enabled: true,
      KeyState: 'Enabled',
      KeyUsage: 'ENCRYPT_DECRYPT',
    });
  });
});

describe('local KMS with a key file', () => {
  it('keeps the master key across restarts, in a file only its owner can read', async () => {
    // Prepare
    const dir = await mkdtemp(join(tmpdir(), 'sluice-kms-test-'));
    const keyFile = join(dir, 'kms-keys.json');
    try {
      const first = await startKmsLocal({ keyFile });
      const firstClient = clientFor(first);
      const sealed = await firstClient.send(
        new EncryptCommand({
          KeyId: first.keyId,
          Plaintext: Buffer.from('kept'),
          EncryptionContext: { a: 'b' },
        }),
      );
      firstClient.destroy();
      await first.stop();
      // Act
      const second = await startKmsLocal({ keyFile });
      const secondClient = clientFor(second);
      const opened = await secondClient.send(
        new DecryptCommand({ CiphertextBlob: sealed.CiphertextBlob, EncryptionContext: { a: 'b' } }),
      );
      secondClient.destroy();
      await second.stop();
      // Assess
      expect(second.keyId).toBe(first.keyId);
      expect(Buffer.from(opened.Plaintext ?? []).toString()).toBe('kept');
      expect((await stat(keyFile)).mode & 0o077).toBe(0);
      expect(Object.keys(JSON.parse(await readFile(keyFile, 'utf8')).keys)).toEqual([first.keyId]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
